package sidecar

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/schematest"
	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func loadSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../docs/schema/" + name)
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
	slices.Sort(out)
	return out
}

func propNames(s map[string]any) []string {
	return slices.Sorted(maps.Keys(s["properties"].(map[string]any)))
}

// TestSchemasMatchTypes fails when a field is added to Spec, Receipt, Record, Limits or Event without the schema
// (or the other way round): the schema is the contract the gateway validates against.
func TestSchemasMatchTypes(t *testing.T) {
	spec, receipt := loadSchema(t, "spec.schema.json"), loadSchema(t, "receipt.schema.json")
	record := receipt["$defs"].(map[string]any)["record"].(map[string]any)
	for _, c := range []struct {
		name   string
		schema map[string]any
		typ    reflect.Type
	}{
		{"spec", spec, reflect.TypeFor[worker.Spec]()},
		{"spec.limits", spec["properties"].(map[string]any)["limits"].(map[string]any), reflect.TypeFor[cgroup.Limits]()},
		{"receipt", receipt, reflect.TypeFor[worker.Receipt]()},
		{"record", record, reflect.TypeFor[worker.Record]()},
		{"event", loadSchema(t, "event.schema.json"), reflect.TypeFor[events.Event]()},
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
	rec := worker.Record{Receipt: worker.Receipt{ID: "w-0123456789ab", Token: "t", PID: 5, Mode: "cgroup",
		Profile: "b", Home: "/h", Argv: []string{"x"}, BootID: "b", MachineID: "m", StartTime: 1,
		InstantiationEpoch: "b:1", Fingerprint: "b:1|1", Verification: "verified", StartedAt: "2026-01-01T00:00:00Z"},
		State: "exited", ExitCode: &code}
	var recJSON map[string]any
	b, _ := json.Marshal(rec)
	_ = json.Unmarshal(b, &recJSON)
	if errs := schematest.Validate(receipt, map[string]any{"$ref": "#/$defs/record"}, recJSON, "record"); len(errs) > 0 {
		t.Fatalf("a valid record fails: %v", errs)
	}
	if errs := schematest.Validate(receipt, receipt, recJSON, "receipt"); len(errs) == 0 {
		t.Fatal("a record with state must not pass as a bare receipt (additionalProperties false)")
	}
	evSchema := loadSchema(t, "event.schema.json")
	ev := events.For("exited", rec, true)
	ev.Seq, ev.Time = 7, "2026-01-01T00:00:00.000000001Z"
	var evJSON map[string]any
	b, _ = json.Marshal(ev)
	_ = json.Unmarshal(b, &evJSON)
	if errs := schematest.Validate(evSchema, evSchema, evJSON, "event"); len(errs) > 0 {
		t.Fatalf("an exited event fails its schema: %v", errs)
	}
	evJSON["type"] = "exploded"
	if errs := schematest.Validate(evSchema, evSchema, evJSON, "event"); len(errs) == 0 {
		t.Fatal("an event of an unknown type passes its schema")
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
		if errs := schematest.Validate(spec, spec, v, "spec"); (len(errs) == 0) != c.valid {
			t.Errorf("%s: valid=%v, errors %v", c.body, c.valid, errs)
		}
	}
}
