// Package strictjson decodes JSON documents that a hostile or confused writer may have shaped to be read
// one way by a proxy, a JSON Schema validator or a Python client and another way by hlaunch.
//
// encoding/json is lenient where that matters: an object key matches a struct field case-insensitively
// ({"Profile":"c"} fills Profile), a repeated key silently overwrites the earlier one
// ({"profile":"b","profile":"c"} runs as c), and invalid UTF-8 is replaced with U+FFFD. A reader that
// takes the first duplicate, or matches keys exactly, sees a different document. Decode refuses all of
// these before encoding/json fills the value: keys must be exactly a field's JSON name, no object may
// repeat a key, unknown keys are refused, the bytes must be valid UTF-8 with no lone surrogate escapes,
// and exactly one value may be present.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error Decode returns; the message names the offending key by its path
// (for example `limits.memory`) or the byte offset.
var ErrSyntax = errors.New("malformed JSON")

// maxDepth bounds the nesting of a document. hlaunch's documents are at most three levels deep; the bound
// keeps a hostile "[[[[...]]]]" from costing more than its bytes.
const maxDepth = 32

// Decode decodes exactly one JSON value from data into v (a non-nil pointer), strictly: see the package
// doc. An empty document is an error (io.EOF wrapped in ErrSyntax).
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: decode target must be a non-nil pointer", ErrSyntax)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: not UTF-8 at byte %d", ErrSyntax, invalidOffset(data))
	}
	if off := loneSurrogate(data); off >= 0 {
		// encoding/json turns "\ud800" into U+FFFD; another reader keeps it or refuses the document.
		return fmt.Errorf("%w: unpaired surrogate escape at byte %d", ErrSyntax, off)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec}
	if err := w.value(rv.Type().Elem(), "", 0); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty document: %w", ErrSyntax, io.EOF)
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: trailing data after the JSON value (byte %d)", ErrSyntax, dec.InputOffset())
	}
	// The walk proved every key exact and unique, so encoding/json's case-insensitive fallback can no
	// longer choose a field; DisallowUnknownFields stays as a second guard.
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return nil
}

// invalidOffset is the offset of the first byte of data that is not part of valid UTF-8.
func invalidOffset(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}

// loneSurrogate is the offset of the first \uXXXX escape that is half a surrogate pair without its other
// half, or -1. A backslash can only stand inside a string in valid JSON, so the scan needs no tokenizer;
// invalid JSON is refused by the decoder anyway.
func loneSurrogate(data []byte) int {
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if i+1 >= len(data) || data[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hex4(data, i+2)
		if !ok {
			return -1 // malformed escape: the decoder's error names it
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := hex4(data, i+8)
			if i+7 >= len(data) || data[i+6] != '\\' || data[i+7] != 'u' || !ok || lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 11
		default:
			i += 5
		}
	}
	return -1
}

// hex4 parses the four hex digits at data[i:i+4].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// walker reads the token stream once, following the Go type the value will be decoded into.
type walker struct{ dec *json.Decoder }

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// value consumes one JSON value that will land in a t (nil: anything, checked for duplicates only).
func (w *walker) value(t reflect.Type, path string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: %s: nested deeper than %d", ErrSyntax, where(path), maxDepth)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil // decoded by its own rules: only the structure is checked
	}
	tok, err := w.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return err
		}
		return fmt.Errorf("%w: %s: %w", ErrSyntax, where(path), err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			return w.object(t, path, depth)
		case '[':
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for i := 0; w.dec.More(); i++ {
				if err := w.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
					return eofIsSyntax(err, path)
				}
			}
			_, err := w.dec.Token() // ']'
			return eofIsSyntax(err, path)
		}
	}
	return nil
}

// object consumes the members of an object whose '{' was read.
func (w *walker) object(t reflect.Type, path string, depth int) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	isStruct := t != nil && t.Kind() == reflect.Struct
	if isStruct {
		fields = structFields(t)
	} else if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	seen := make(map[string]struct{})
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return eofIsSyntax(err, path)
		}
		key, _ := tok.(string)
		kp := key
		if path != "" {
			kp = path + "." + key
		}
		if _, dup := seen[key]; dup {
			return fmt.Errorf("%w: duplicate key %q", ErrSyntax, kp)
		}
		seen[key] = struct{}{}
		next := elem
		if isStruct {
			ft, ok := fields[key]
			if !ok {
				return fmt.Errorf("%w: unknown key %q (keys are case-sensitive)", ErrSyntax, kp)
			}
			next = ft
		}
		if err := w.value(next, kp, depth+1); err != nil {
			return eofIsSyntax(err, kp)
		}
	}
	_, err := w.dec.Token() // '}'
	return eofIsSyntax(err, path)
}

// structFields maps each JSON name of t's fields (as encoding/json names them, embedded structs
// flattened) to the field's type.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// eofIsSyntax turns an end of input inside a value into a syntax error (only a document that has no
// value at all is "empty").
func eofIsSyntax(err error, path string) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: unexpected end of input", ErrSyntax, where(path))
	}
	return err
}

func where(path string) string {
	if path == "" {
		return "document"
	}
	return "key " + path
}
