package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	Memory int64 `json:"memory,omitempty"`
	Pids   int64 `json:"pids,omitempty"`
}

type doc struct {
	Profile string            `json:"profile"`
	Sandbox bool              `json:"sandbox,omitempty"`
	Argv    []string          `json:"argv"`
	Env     map[string]string `json:"env,omitempty"`
	Limits  inner             `json:"limits,omitempty"`
	Any     any               `json:"any,omitempty"`
	Skipped string            `json:"-"`
	NoTag   string
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"case variant of a key", `{"profile":"b","Profile":"c"}`, `unknown key "Profile"`},
		{"case variant alone", `{"PROFILE":"c"}`, `unknown key "PROFILE"`},
		{"duplicate key", `{"profile":"b","profile":"c"}`, `duplicate key "profile"`},
		{"duplicate bool", `{"sandbox":true,"sandbox":false}`, `duplicate key "sandbox"`},
		{"nested duplicate", `{"limits":{"memory":1,"memory":0}}`, `duplicate key "limits.memory"`},
		{"nested case variant", `{"limits":{"Memory":1}}`, `unknown key "limits.Memory"`},
		{"duplicate map key", `{"env":{"A":"1","A":"2"}}`, `duplicate key "env.A"`},
		{"duplicate inside any", `{"any":{"x":[{"y":1,"y":2}]}}`, `duplicate key "any.x[0].y"`},
		{"unknown key", `{"profile":"b","sandbx":true}`, `unknown key "sandbx"`},
		{"ignored field", `{"Skipped":"x"}`, `unknown key "Skipped"`},
		{"trailing value", `{"profile":"b"}{"profile":"c"}`, "trailing data"},
		{"trailing garbage", `{"profile":"b"} x`, "trailing data"},
		{"empty", ``, "empty document"},
		{"blank", " \n\t", "empty document"},
		{"truncated", `{"profile":"b"`, "unexpected end"},
		{"not UTF-8", "{\"profile\":\"b\xff\"}", "not UTF-8 at byte 13"},
		{"lone high surrogate", `{"profile":"\ud800"}`, "unpaired surrogate escape at byte 12"},
		{"lone low surrogate", `{"profile":"x\udc00"}`, "unpaired surrogate"},
		{"high then non-low", `{"profile":"\ud800\u0041"}`, "unpaired surrogate"},
		{"deep nesting", `{"any":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "nested deeper"},
		{"wrong type", `{"profile":1}`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := Decode([]byte(tt.in), &d)
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%q) = %v, want ErrSyntax containing %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	var d doc
	in := `{"profile":"b","sandbox":true,"argv":["a","\ud83d\ude00","\\ud800"],"env":{"A":"1","a":"2"},` +
		`"limits":{"memory":5},"any":{"k":[1,{"k":2}]},"NoTag":"x"}`
	if err := Decode([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if d.Profile != "b" || !d.Sandbox || d.Limits.Memory != 5 || d.Env["A"] != "1" || d.Env["a"] != "2" ||
		d.Argv[1] != "\U0001F600" || d.Argv[2] != `\ud800` || d.NoTag != "x" {
		t.Fatalf("decoded %+v", d)
	}
	var m map[string]int
	if err := Decode([]byte(`{"x":1}`), &m); err != nil || m["x"] != 1 {
		t.Fatalf("map: %v %v", m, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"profile":"b","Profile":"c"}`))
	f.Add([]byte(`{"limits":{"memory":1},"argv":["x"]}`))
	f.Add([]byte(`{"profile":"\ud800\udc00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		if Decode(data, &d) != nil {
			return
		}
		// Whatever is accepted survives a round trip through the standard encoder unchanged: it held
		// nothing the decoder dropped or merged.
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var d2 doc
		if err := Decode(out, &d2); err != nil || !reflect.DeepEqual(d.Profile, d2.Profile) ||
			!reflect.DeepEqual(d.Argv, d2.Argv) || d.Limits != d2.Limits || d.Sandbox != d2.Sandbox {
			t.Fatalf("round trip of %q: %v, %+v vs %+v", data, err, d, d2)
		}
	})
}
