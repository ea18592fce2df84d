package fingerprint

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseHermesFingerprint splits a hermes fingerprint column, "<boot_id>:<pid1 start>|<start>", into its
// instantiation epoch ("<boot_id>:<pid1 start>") and the process start time.
//
// "unverified" is ErrUnverifiedRow (hermes could not capture the identity: hold, never signal). An empty
// column - a NULL read as "", or "null"/"none" in any case - is ErrLegacyRow (a row from before fingerprints:
// a bare PID, never signalled). Anything else that is not exactly the form above is ErrMalformed. Numbers
// must be canonical decimal and the boot id a lowercase UUID, as the kernel writes it.
func ParseHermesFingerprint(s string) (epoch string, start uint64, err error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "":
		return "", 0, fmt.Errorf("%w: empty fingerprint", ErrLegacyRow)
	case "null", "none":
		return "", 0, fmt.Errorf("%w: fingerprint is %q", ErrLegacyRow, t)
	case "unverified":
		return "", 0, ErrUnverifiedRow
	}
	epoch, startText, ok := strings.Cut(t, "|")
	if !ok {
		return "", 0, fmt.Errorf("%w: hermes fingerprint %q has no '|'", ErrMalformed, t)
	}
	boot, pid1, ok := strings.Cut(epoch, ":")
	if !ok {
		return "", 0, fmt.Errorf("%w: hermes epoch %q has no ':'", ErrMalformed, epoch)
	}
	if _, ok := compactID(boot, idUUID); !ok {
		return "", 0, fmt.Errorf("%w: hermes boot id %q is not a lowercase UUID", ErrMalformed, boot)
	}
	if _, err := canonicalUint(pid1); err != nil {
		return "", 0, fmt.Errorf("%w: hermes pid1 start %q: %v", ErrMalformed, pid1, err)
	}
	start, err = canonicalUint(startText)
	if err != nil {
		return "", 0, fmt.Errorf("%w: hermes start %q: %v", ErrMalformed, startText, err)
	}
	return epoch, start, nil
}

// canonicalUint parses decimal without sign, spaces or leading zeros, so that one number has one spelling.
func canonicalUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a decimal number")
	}
	if strconv.FormatUint(v, 10) != s {
		return 0, fmt.Errorf("not canonical decimal")
	}
	return v, nil
}

// splitEpoch returns the boot id and PID 1 start of an epoch that ParseHermesFingerprint accepted.
func splitEpoch(epoch string) (string, uint64) {
	boot, pid1, _ := strings.Cut(epoch, ":")
	v, _ := strconv.ParseUint(pid1, 10, 64)
	return boot, v
}
