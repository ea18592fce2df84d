package sidecar

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/cgroup"
	"github.com/hlaunch/hlaunch/launcher"
)

// validateSchema checks v (decoded JSON) against the subset of JSON Schema that docs/schema uses: type,
// required, properties, additionalProperties, items, enum, pattern, minimum, maximum, minLength, minItems
// and local $ref. It returns every violation with its JSON path.
func validateSchema(root, s map[string]any, v any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		s = root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			s = s[part].(map[string]any)
		}
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	if t, ok := s["type"].(string); ok {
		okType := false
		switch x := v.(type) {
		case string:
			okType = t == "string"
		case bool:
			okType = t == "boolean"
		case float64:
			okType = t == "number" || (t == "integer" && x == math.Trunc(x))
		case map[string]any:
			okType = t == "object"
		case []any:
			okType = t == "array"
		}
		if !okType {
			bad("%v is not of type %s", v, t)
			return errs
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		bad("%v not in %v", v, enum)
	}
	switch x := v.(type) {
	case string:
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			bad("%q does not match %s", x, p)
		}
		if n, ok := s["minLength"].(float64); ok && float64(len(x)) < n {
			bad("shorter than %v", n)
		}
	case float64:
		if n, ok := s["minimum"].(float64); ok && x < n {
			bad("%v below %v", x, n)
		}
		if n, ok := s["maximum"].(float64); ok && x > n {
			bad("%v above %v", x, n)
		}
	case []any:
		if n, ok := s["minItems"].(float64); ok && float64(len(x)) < n {
			bad("fewer than %v items", n)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				errs = append(errs, validateSchema(root, items, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := x[r]; !ok {
				bad("missing required %q", r)
			}
		}
		for k, e := range x {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, validateSchema(root, ps, e, path+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					bad("unknown property %q", k)
				}
			case map[string]any:
				errs = append(errs, validateSchema(root, ap, e, path+"."+k)...)
			}
		}
	}
	return errs
}

func asStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

func loadSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../docs/schema/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// jsonNames returns the JSON names of a struct's fields, embedded structs flattened.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func propNames(s map[string]any) []string {
	var out []string
	for k := range s["properties"].(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSchemasMatchTypes fails when a field is added to Spec, Receipt, Record or Limits without the schema
// (or the other way round): the schema is the contract the gateway validates against.
func TestSchemasMatchTypes(t *testing.T) {
	spec, receipt := loadSchema(t, "spec.schema.json"), loadSchema(t, "receipt.schema.json")
	record := receipt["$defs"].(map[string]any)["record"].(map[string]any)
	for _, c := range []struct {
		name   string
		schema map[string]any
		typ    reflect.Type
	}{
		{"spec", spec, reflect.TypeFor[launcher.Spec]()},
		{"spec.limits", spec["properties"].(map[string]any)["limits"].(map[string]any), reflect.TypeFor[cgroup.Limits]()},
		{"receipt", receipt, reflect.TypeFor[launcher.Receipt]()},
		{"record", record, reflect.TypeFor[launcher.Record]()},
	} {
		if got, want := propNames(c.schema), jsonNames(c.typ); !slices.Equal(got, want) {
			t.Errorf("%s schema properties %v\n  differ from the Go type's JSON fields %v", c.name, got, want)
		}
	}
}

func TestSchemaValidator(t *testing.T) {
	spec := loadSchema(t, "spec.schema.json")
	receipt := loadSchema(t, "receipt.schema.json")
	code := 3
	rec := launcher.Record{Receipt: launcher.Receipt{ID: "w-0123456789ab", Token: "t", PID: 5, Mode: "cgroup",
		Profile: "b", Home: "/h", Argv: []string{"x"}, BootID: "b", MachineID: "m", StartTime: 1,
		InstantiationEpoch: "b:1", Fingerprint: "b:1|1", Verification: "verified", StartedAt: "2026-01-01T00:00:00Z"},
		State: "exited", ExitCode: &code}
	var recJSON map[string]any
	b, _ := json.Marshal(rec)
	_ = json.Unmarshal(b, &recJSON)
	if errs := validateSchema(receipt, map[string]any{"$ref": "#/$defs/record"}, recJSON, "record"); len(errs) > 0 {
		t.Fatalf("a valid record fails: %v", errs)
	}
	if errs := validateSchema(receipt, receipt, recJSON, "receipt"); len(errs) == 0 {
		t.Fatal("a record with state must not pass as a bare receipt (additionalProperties false)")
	}
	for _, c := range []struct {
		body  string
		valid bool
	}{
		{`{"profile":"b","argv":["true"],"limits":{"memory":1024,"cpus":0.5},"timeout":"1m30s"}`, true},
		{`{"profile":"b","argv":[]}`, false},
		{`{"profile":"b"}`, false},
		{`{"profile":"b","argv":["x"],"scope":"box"}`, false},
		{`{"profile":"b","argv":["x"],"limits":{"mem":1}}`, false},
		{`{"profile":"b","argv":["x"],"limits":{"pids":1.5}}`, false},
		{`{"profile":"b","argv":["x"],"grace":"5"}`, false},
		{`{"profile":"b","argv":["x"],"env":{"A":1}}`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.body), &v); err != nil {
			t.Fatal(err)
		}
		if errs := validateSchema(spec, spec, v, "spec"); (len(errs) == 0) != c.valid {
			t.Errorf("%s: valid=%v, errors %v", c.body, c.valid, errs)
		}
	}
}
