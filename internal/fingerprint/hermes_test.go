package fingerprint

import (
	"errors"
	"testing"
)

const testBoot = "4fb34644-cc97-4bf3-b877-d079839c1f24"

func TestParseHermesFingerprint(t *testing.T) {
	tests := []struct {
		in        string
		wantEpoch string
		wantStart uint64
		wantErr   error
	}{
		{testBoot + ":23|123456", testBoot + ":23", 123456, nil},
		{testBoot + ":0|0", testBoot + ":0", 0, nil},
		{" " + testBoot + ":1|2\n", testBoot + ":1", 2, nil},
		{"unverified", "", 0, ErrUnverifiedRow},
		{"UNVERIFIED", "", 0, ErrUnverifiedRow},
		{"", "", 0, ErrLegacyRow},
		{"  ", "", 0, ErrLegacyRow},
		{"NULL", "", 0, ErrLegacyRow},
		{"None", "", 0, ErrLegacyRow},
		{"123456", "", 0, ErrMalformed},
		{testBoot + ":23", "", 0, ErrMalformed},
		{testBoot + "|5", "", 0, ErrMalformed},
		{testBoot + ":23|", "", 0, ErrMalformed},
		{testBoot + ":|5", "", 0, ErrMalformed},
		{testBoot + ":23|5|6", "", 0, ErrMalformed},
		{testBoot + ":23|-5", "", 0, ErrMalformed},
		{testBoot + ":23|+5", "", 0, ErrMalformed},
		{testBoot + ":23|05", "", 0, ErrMalformed},
		{testBoot + ":23|18446744073709551616", "", 0, ErrMalformed},
		{testBoot + ":2:3|5", "", 0, ErrMalformed},
		{"4FB34644-CC97-4BF3-B877-D079839C1F24:23|5", "", 0, ErrMalformed},
		{"not-a-boot-id:23|5", "", 0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			epoch, start, err := ParseHermesFingerprint(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || epoch != tt.wantEpoch || start != tt.wantStart {
				t.Fatalf("= %q, %d, %v; want %q, %d", epoch, start, err, tt.wantEpoch, tt.wantStart)
			}
		})
	}
}

func TestHermesIdentityRefusals(t *testing.T) {
	tests := []struct {
		pid  int
		fp   string
		want State
	}{
		{10, "unverified", Unverified},
		{10, "", Unverified},
		{10, "garbage", Malformed},
		{0, testBoot + ":1|2", Malformed},
		{-3, testBoot + ":1|2", Malformed},
	}
	for _, tt := range tests {
		_, v, ok := hermesIdentity(tt.pid, tt.fp)
		if ok || v.State != tt.want {
			t.Errorf("hermesIdentity(%d, %q) = %v, %v; want %s", tt.pid, tt.fp, v, ok, tt.want)
		}
	}
	id, _, ok := hermesIdentity(7, testBoot+":23|99")
	if !ok || id.BootID != testBoot || id.PID1Start != 23 || id.Start != 99 || id.PID != 7 || id.Fingerprint() != testBoot+":23|99" {
		t.Fatalf("hermesIdentity = %+v, %v", id, ok)
	}
}

func TestEpochAndFingerprint(t *testing.T) {
	id := Identity{BootID: testBoot, PID1Start: 23, Start: 99}
	if id.Epoch() != testBoot+":23" || id.Fingerprint() != testBoot+":23|99" {
		t.Fatalf("Epoch/Fingerprint = %q %q", id.Epoch(), id.Fingerprint())
	}
	id.Unverified = true
	if id.Fingerprint() != "unverified" {
		t.Fatalf("unverified Fingerprint = %q", id.Fingerprint())
	}
	if (Identity{}).Epoch() != "" || (Identity{}).Fingerprint() != "unverified" {
		t.Fatal("zero identity must have no epoch and an unverified fingerprint")
	}
	u := id.WithUnit("hermes-worker-proc_0123456789ab.scope", "0123456789abcdef0123456789abcdef")
	if u.Unit == "" || u.InvocationID == "" || id.Unit != "" {
		t.Fatal("WithUnit must return a modified copy")
	}
}
