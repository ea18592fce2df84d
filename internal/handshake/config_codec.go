package handshake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
)

// A Config travels as JSON in which every byte string is a JSON byte array (base64): argv, the environ
// and paths are byte strings to the kernel, and a JSON string would replace every byte that is not UTF-8
// with U+FFFD (`hlaunch exec --sandbox -- cat $'\xff'` opened a file named "\uFFFD"). wireConfig and
// wireSandbox mirror Config and sandbox.Spec field for field, with []byte for string.
type wireConfig struct {
	Argv    [][]byte     `json:"argv,omitempty"`
	Env     [][]byte     `json:"env,omitempty"`
	Cwd     []byte       `json:"cwd,omitempty"`
	Sandbox *wireSandbox `json:"sandbox,omitempty"`
}

type wireSandbox struct {
	Root       []byte         `json:"root,omitempty"`
	Home       []byte         `json:"home,omitempty"`
	HomeID     sandbox.FileID `json:"home_id"`
	Cwd        []byte         `json:"cwd,omitempty"`
	RW         [][]byte       `json:"rw,omitempty"`
	Hide       [][]byte       `json:"hide,omitempty"`
	Cover      [][]byte       `json:"cover,omitempty"`
	Protect    [][]byte       `json:"protect,omitempty"`
	Require    [][]byte       `json:"require,omitempty"`
	Net        []byte         `json:"net,omitempty"`
	UID        int            `json:"uid"`
	GID        int            `json:"gid"`
	SetUser    bool           `json:"set_user,omitempty"`
	KeepCaps   bool           `json:"keep_caps,omitempty"`
	SeccompOff bool           `json:"seccomp_off,omitempty"`
	Unscoped   bool           `json:"unscoped,omitempty"`
}

// errConfigCodec wraps every malformed Config encoding.
var errConfigCodec = errors.New("handshake: malformed config")

// MarshalJSON encodes c losslessly (see wireConfig).
func (c Config) MarshalJSON() ([]byte, error) {
	w := wireConfig{Argv: toBytes(c.Argv), Env: toBytes(c.Env), Cwd: []byte(c.Cwd)}
	if s := c.Sandbox; s != nil {
		w.Sandbox = &wireSandbox{
			Root: []byte(s.Root), Home: []byte(s.Home), HomeID: s.HomeID, Cwd: []byte(s.Cwd),
			RW: toBytes(s.RW), Hide: toBytes(s.Hide), Cover: toBytes(s.Cover),
			Protect: toBytes(s.Protect), Require: toBytes(s.Require), Net: []byte(s.Net),
			UID: s.UID, GID: s.GID,
			SetUser: s.SetUser, KeepCaps: s.KeepCaps, SeccompOff: s.SeccompOff, Unscoped: s.Unscoped,
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON wrote; an unknown field, a string where bytes belong, or
// anything after the value is an error.
func (c *Config) UnmarshalJSON(data []byte) error {
	var w wireConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: %w", errConfigCodec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the end", errConfigCodec)
	}
	out := Config{Argv: toStrings(w.Argv), Env: toStrings(w.Env), Cwd: string(w.Cwd)}
	if s := w.Sandbox; s != nil {
		out.Sandbox = &sandbox.Spec{
			Root: string(s.Root), Home: string(s.Home), HomeID: s.HomeID, Cwd: string(s.Cwd),
			RW: toStrings(s.RW), Hide: toStrings(s.Hide), Cover: toStrings(s.Cover),
			Protect: toStrings(s.Protect), Require: toStrings(s.Require), Net: string(s.Net),
			UID: s.UID, GID: s.GID,
			SetUser: s.SetUser, KeepCaps: s.KeepCaps, SeccompOff: s.SeccompOff, Unscoped: s.Unscoped,
		}
	}
	*c = out
	return nil
}

// MarshalBinary is MarshalJSON: the form the stub reads from its config pipe.
func (c Config) MarshalBinary() ([]byte, error) { return c.MarshalJSON() }

// UnmarshalBinary is UnmarshalJSON.
func (c *Config) UnmarshalBinary(data []byte) error { return c.UnmarshalJSON(data) }

func toBytes(ss []string) [][]byte {
	if len(ss) == 0 {
		return nil
	}
	bs := make([][]byte, len(ss))
	for i, s := range ss {
		bs[i] = []byte(s)
	}
	return bs
}

func toStrings(bs [][]byte) []string {
	if len(bs) == 0 {
		return nil
	}
	ss := make([]string, len(bs))
	for i, b := range bs {
		ss[i] = string(b)
	}
	return ss
}
