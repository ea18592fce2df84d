package cgroup

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a memory size for flags like --memory: a plain byte count ("1048576"), or a number with
// a binary suffix K, M, G or T (optionally followed by "i"/"B", case-insensitive: "512M", "1Gi", "2gb"),
// or "max" (no limit), which yields 0. Fractions are allowed with a suffix ("1.5G"); the result is rounded
// down to whole bytes. Negative, zero-with-suffix-overflow and out-of-range sizes are errors.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "max") {
		return 0, nil
	}
	if t == "" {
		return 0, fmt.Errorf("cgroup: empty size")
	}
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(u, "B")
	u = strings.TrimSuffix(u, "I")
	mult := int64(1)
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			u = u[:n-1]
		}
	}
	if u == "" || u[0] == '-' || u[0] == '+' {
		return 0, fmt.Errorf("cgroup: invalid size %q", s)
	}
	if mult == 1 {
		v, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cgroup: invalid size %q: %w", s, err)
		}
		return v, nil
	}
	if !strings.Contains(u, ".") {
		v, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cgroup: invalid size %q: %w", s, err)
		}
		if v > math.MaxInt64/mult {
			return 0, fmt.Errorf("cgroup: size %q out of range", s)
		}
		return v * mult, nil
	}
	f, err := strconv.ParseFloat(u, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("cgroup: invalid size %q", s)
	}
	b := f * float64(mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("cgroup: size %q out of range", s)
	}
	return int64(b), nil
}
