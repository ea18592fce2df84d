// Package schematest checks JSON documents against the subset of JSON Schema that docs/schema uses, for the
// tests that validate real payloads (the sidecar's unit tests and the integration tests). It is test
// support only; no binary imports it.
package schematest

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Validate checks v (decoded JSON) against schema s, with root for local $refs: type, required,
// properties, additionalProperties, items, enum, pattern, minimum, maximum, minLength, minItems. It
// returns every violation with its JSON path.
func Validate(root, s map[string]any, v any, path string) []string {
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
				errs = append(errs, Validate(root, items, e, fmt.Sprintf("%s[%d]", path, i))...)
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
				errs = append(errs, Validate(root, ps, e, path+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					bad("unknown property %q", k)
				}
			case map[string]any:
				errs = append(errs, Validate(root, ap, e, path+"."+k)...)
			}
		}
	}
	return errs
}

// ValidateJSON is Validate for raw JSON, at path "$".
func ValidateJSON(root, s map[string]any, raw []byte) []string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return []string{err.Error()}
	}
	return Validate(root, s, v, "$")
}

func asStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}
