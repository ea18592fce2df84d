package handshake

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
)

// A Config travels as bytes, not as JSON fields: argv, the environ and paths are byte strings to the
// kernel, and JSON would replace every byte that is not UTF-8 with U+FFFD (`hlaunch exec --sandbox --
// cat $'\xff'` opened a file named "\uFFFD"). The encoding also spares the stub, and the launcher, the
// reflection encoding/json does on a type's first use (0.1 ms each in a fresh process).
//
// Layout: configMagic, then uvarint-prefixed byte strings and lists: argv, env, cwd; a presence byte for the sandbox, then its Root, Home, Cwd, RW, Hide, Cover,
// Protect, Require, Net, UID and GID (varints), the HomeID's device and inode (uvarints) and a flag byte
// (1 SetUser, 2 KeepCaps, 4 SeccompOff, 8 Unscoped).
const configMagic = "hlc2"

// errConfigCodec wraps every malformed Config encoding.
var errConfigCodec = errors.New("handshake: malformed config")

// MarshalBinary encodes c losslessly.
func (c Config) MarshalBinary() ([]byte, error) {
	b := []byte(configMagic)
	b = appendStrings(b, c.Argv)
	b = appendStrings(b, c.Env)
	b = appendString(b, c.Cwd)
	if c.Sandbox == nil {
		return append(b, 0), nil
	}
	s := c.Sandbox
	b = append(b, 1)
	b = appendString(b, s.Root)
	b = appendString(b, s.Home)
	b = appendString(b, s.Cwd)
	b = appendStrings(b, s.RW)
	b = appendStrings(b, s.Hide)
	b = appendStrings(b, s.Cover)
	b = appendStrings(b, s.Protect)
	b = appendStrings(b, s.Require)
	b = appendString(b, s.Net)
	b = binary.AppendVarint(b, int64(s.UID))
	b = binary.AppendVarint(b, int64(s.GID))
	b = binary.AppendUvarint(b, s.HomeID.Dev)
	b = binary.AppendUvarint(b, s.HomeID.Ino)
	var flags byte
	if s.SetUser {
		flags |= 1
	}
	if s.KeepCaps {
		flags |= 2
	}
	if s.SeccompOff {
		flags |= 4
	}
	if s.Unscoped {
		flags |= 8
	}
	return append(b, flags), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote; anything else, or anything after it, is an error.
func (c *Config) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	if string(d.take(len(configMagic))) != configMagic {
		return fmt.Errorf("%w: no %q header", errConfigCodec, configMagic)
	}
	var out Config
	out.Argv = d.list()
	out.Env = d.list()
	out.Cwd = d.str()
	switch d.octet() {
	case 0:
	case 1:
		s := &sandbox.Spec{}
		s.Root, s.Home, s.Cwd = d.str(), d.str(), d.str()
		s.RW, s.Hide, s.Cover = d.list(), d.list(), d.list()
		s.Protect, s.Require = d.list(), d.list()
		s.Net = d.str()
		s.UID, s.GID = d.varint(), d.varint()
		s.HomeID.Dev, s.HomeID.Ino = d.uvarint(), d.uvarint()
		flags := d.octet()
		s.SetUser, s.KeepCaps, s.SeccompOff, s.Unscoped = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0
		if flags&^15 != 0 && d.err == nil {
			d.err = fmt.Errorf("%w: unknown sandbox flags %#x", errConfigCodec, flags)
		}
		out.Sandbox = s
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: bad sandbox marker", errConfigCodec)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes after the end", errConfigCodec, len(d.b))
	}
	if d.err != nil {
		return d.err
	}
	*c = out
	return nil
}

// MarshalText is the binary encoding in base64, so that a Config inside a JSON message (the shim's
// config) keeps every byte too.
func (c Config) MarshalText() ([]byte, error) {
	b, err := c.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.AppendEncode(nil, b), nil
}

// UnmarshalText reads what MarshalText wrote.
func (c *Config) UnmarshalText(text []byte) error {
	b, err := base64.StdEncoding.AppendDecode(nil, text)
	if err != nil {
		return fmt.Errorf("%w: %w", errConfigCodec, err)
	}
	return c.UnmarshalBinary(b)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// decoder reads the encoding; the first error sticks and every later read returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", errConfigCodec, what)
	}
	d.b = nil
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.fail("field")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if d.err != nil || n <= 0 {
		d.fail("length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int {
	v, n := binary.Varint(d.b)
	if d.err != nil || n <= 0 || int64(int(v)) != v {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) octet() byte {
	if b := d.take(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	return string(d.take(int(n)))
}

func (d *decoder) list() []string {
	n := d.uvarint()
	// Every element takes at least its length byte: a count beyond what is left is a lie.
	if n > uint64(len(d.b)) {
		d.fail("list")
		return nil
	}
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.str()
	}
	if d.err != nil {
		return nil
	}
	return ss
}
