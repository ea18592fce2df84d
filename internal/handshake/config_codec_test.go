package handshake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
)

// fullConfig sets every field of Config and sandbox.Spec, by reflection, so that a field added later
// and forgotten by the codec comes back zero and fails the round trip. Strings carry bytes that are not
// UTF-8.
func fullConfig(t testing.TB) Config {
	c := Config{Sandbox: &sandbox.Spec{}}
	fill := func(v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString(v.Type().Field(i).Name + "=\xff\xfe/\x00x")
			case reflect.Slice:
				if f.Type().Elem().Kind() == reflect.String {
					f.Set(reflect.ValueOf([]string{"a\xff", "", "b\u00e9"}))
				}
			case reflect.Int:
				f.SetInt(-7 - int64(i))
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Pointer, reflect.Struct:
				// Sandbox is set above.
			default:
				t.Fatalf("fullConfig: field %s of kind %s: teach the codec and this test", v.Type().Field(i).Name, f.Kind())
			}
		}
	}
	fill(reflect.ValueOf(&c).Elem())
	fill(reflect.ValueOf(c.Sandbox).Elem())
	c.Sandbox.HomeID = sandbox.FileID{Dev: 1<<40 + 3, Ino: 1<<63 + 5}
	return c
}

// Every byte of argv, the environ and the paths survives, in the stub's framing and inside JSON (the
// shim's config), which replaced bytes that are not UTF-8 with U+FFFD before.
func TestConfigRoundTrip(t *testing.T) {
	in := fullConfig(t)
	var buf bytes.Buffer
	if err := writeConfig(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := readConfig(&buf)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("framed round trip:\n got %+v %+v (%v)\nwant %+v %+v", out, out.Sandbox, err, in, in.Sandbox)
	}
	if _, err := readConfig(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: %v, want EOF", err)
	}
	type shimLike struct {
		Init Config `json:"init"`
	}
	b, err := json.Marshal(shimLike{in})
	if err != nil {
		t.Fatal(err)
	}
	var back shimLike
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Init, in) {
		t.Fatalf("inside JSON: %+v (%v)", back.Init, err)
	}
	// Without a sandbox and with empty lists.
	small := Config{Argv: []string{"true"}}
	sb, _ := small.MarshalBinary()
	var got Config
	if err := got.UnmarshalBinary(sb); err != nil || !reflect.DeepEqual(got, small) {
		t.Fatalf("small: %+v (%v)", got, err)
	}
}

// Anything but one whole encoding is refused: every truncation, data after it, an unknown field, a
// string where bytes belong.
func TestConfigMalformed(t *testing.T) {
	whole, err := fullConfig(t).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	for n := 0; n < len(whole); n++ {
		if err := c.UnmarshalBinary(whole[:n]); !errors.Is(err, errConfigCodec) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(whole), err)
		}
	}
	for name, b := range map[string][]byte{
		"trailing data":  append(append([]byte{}, whole...), "{}"...),
		"unknown field":  []byte(`{"argv":["dHJ1ZQ=="],"cpus":"0"}`),
		"text for bytes": []byte(`{"argv":["cat $x"]}`),
		"sandbox field":  []byte(`{"sandbox":{"root":"Lw==","extra":1}}`),
	} {
		if err := c.UnmarshalBinary(b); !errors.Is(err, errConfigCodec) {
			t.Errorf("%s: %v, want a malformed-config error", name, err)
		}
	}
}

// FuzzConfigDecode: no input makes the decoder panic, and what it accepts decodes the same again after
// encoding.
func FuzzConfigDecode(f *testing.F) {
	whole, _ := fullConfig(f).MarshalBinary()
	f.Add(whole)
	small, _ := Config{Argv: []string{"true"}}.MarshalBinary()
	f.Add(small)
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Config
		if err := c.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := c.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var d Config
		if err := d.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(c, d) {
			t.Fatalf("accepted %q, re-encoded differently: %v", b, err)
		}
	})
}

// BenchmarkConfigCodec is a held launch's config, encoded by the launcher and decoded by the init stub;
// BenchmarkConfigJSON is the same round trip with plain JSON strings (which lose bytes that are not
// UTF-8), to show what the byte arrays cost.
func BenchmarkConfigCodec(b *testing.B) {
	in := fullConfig(b)
	b.ReportAllocs()
	for b.Loop() {
		buf, err := in.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		var out Config
		if err := out.UnmarshalBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConfigJSON(b *testing.B) {
	type wire struct {
		Argv, Env []string
		Cwd       string
		Sandbox   *sandbox.Spec
	}
	c := fullConfig(b)
	in := wire(c)
	b.ReportAllocs()
	for b.Loop() {
		buf, err := json.Marshal(in)
		if err != nil {
			b.Fatal(err)
		}
		var out wire
		if err := json.Unmarshal(buf, &out); err != nil {
			b.Fatal(err)
		}
	}
}
