package profile

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeName(t *testing.T) {
	tests := []struct {
		raw  string
		want string
		err  error
	}{
		{"b", "b", nil},
		{"  Coder \n", "coder", nil},
		{"A1_b-c", "a1_b-c", nil},
		{"0", "0", nil},
		{strings.Repeat("a", 64), strings.Repeat("a", 64), nil},
		{"default", DefaultProfile, nil},
		{"DEFAULT", DefaultProfile, nil},
		{" Default ", DefaultProfile, nil},
		{"", "", ErrInvalidName},
		{"   ", "", ErrInvalidName},
		{strings.Repeat("a", 65), "", ErrInvalidName},
		{"../x", "", ErrInvalidName},
		{"..", "", ErrInvalidName},
		{"a/b", "", ErrInvalidName},
		{"/abs", "", ErrInvalidName},
		{".deleted", "", ErrInvalidName},
		{"_a", "", ErrInvalidName},
		{"-a", "", ErrInvalidName},
		{"a b", "", ErrInvalidName},
		{"a.b", "", ErrInvalidName},
		{"a\x00", "", ErrInvalidName},
		{"caf\u00e9", "", ErrInvalidName},
		{"\u212aate", "", ErrInvalidName}, // KELVIN SIGN: Python lower() makes it "kate"; refused on purpose
		{"\u0130", "", ErrInvalidName},
		{"hermes", "", ErrReservedName},
		{"Test", "", ErrReservedName},
		{"tmp", "", ErrReservedName},
		{"ROOT", "", ErrReservedName},
		{"sudo", "", ErrReservedName},
		{"hermes2", "hermes2", nil},
	}
	for _, tt := range tests {
		got, err := NormalizeName(tt.raw)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("NormalizeName(%q) = %q, %v; want %q, %v", tt.raw, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), "profile name") {
			t.Errorf("NormalizeName(%q): error %q does not say what it refused", tt.raw, err)
		}
	}
}
