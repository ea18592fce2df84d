package fingerprint

import (
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func sampleIdentities() map[string]Identity {
	full := Identity{
		Version: FormatVersion, MachineID: "3d1219c7c4c5404aaa1f6d2a48adfda4", BootID: testBoot, PID1Start: 23,
		Cgroup: "/hlaunch/w-0123456789ab", CgroupID: 123456789, PID: 31337, Start: 987654321,
		Unit: "hermes-worker-proc_0123456789ab.scope", InvocationID: "0123456789abcdef0123456789abcdef",
	}
	odd := full
	odd.MachineID, odd.BootID, odd.InvocationID = "3D1219C7C4C5404AAA1F6D2A48ADFDA4", "other-boot", "not-hex"
	noCgroup := full
	noCgroup.Cgroup, noCgroup.CgroupID, noCgroup.Unit, noCgroup.InvocationID = "", 0, "", ""
	bigs := full
	bigs.PID1Start, bigs.CgroupID, bigs.Start, bigs.PID = ^uint64(0), ^uint64(0), ^uint64(0), 1<<31-1
	unverified := Identity{Version: FormatVersion, BootID: testBoot, PID: 12, Unverified: true,
		Reason: "boot id: injected failure; leader: pid 12 exited before its identity was captured"}
	emptyUnverified := Identity{Version: FormatVersion, Unverified: true}
	return map[string]Identity{"full": full, "odd ids": odd, "no cgroup": noCgroup, "max values": bigs,
		"unverified": unverified, "unverified empty": emptyUnverified}
}

func TestTokenRoundTrip(t *testing.T) {
	for name, id := range sampleIdentities() {
		t.Run(name, func(t *testing.T) {
			tok := id.Token()
			if !strings.HasPrefix(tok, "hl1.") || strings.ContainsAny(tok, "+/= \n") {
				t.Fatalf("token %q is not hl1.+base64url", tok)
			}
			got, err := ParseToken(tok)
			if err != nil {
				t.Fatalf("ParseToken: %v", err)
			}
			if !reflect.DeepEqual(got, id) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, id)
			}
			if got.Token() != tok {
				t.Fatalf("re-encoding differs")
			}
		})
	}
}

func TestTokenCompact(t *testing.T) {
	tok := sampleIdentities()["full"].Token()
	if len(tok) > 200 {
		t.Errorf("token is %d chars, want a compact token: %s", len(tok), tok)
	}
}

// Every single-character change and every truncation must be rejected as malformed: never another identity.
func TestTokenTamper(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ "
	for name, id := range sampleIdentities() {
		tok := id.Token()
		for i := 0; i < len(tok); i++ {
			for _, c := range []byte(alphabet) {
				if c == tok[i] {
					continue
				}
				bad := tok[:i] + string(c) + tok[i+1:]
				if got, err := ParseToken(bad); !errors.Is(err, ErrMalformed) {
					t.Fatalf("%s: changed byte %d to %q: ParseToken = %+v, %v; want ErrMalformed", name, i, c, got, err)
				}
			}
			for _, x := range []byte{1, 0x20, 0x80, 0xff} {
				b := []byte(tok)
				b[i] ^= x
				if _, err := ParseToken(string(b)); !errors.Is(err, ErrMalformed) {
					t.Fatalf("%s: xor byte %d with %#x: err = %v", name, i, x, err)
				}
			}
		}
		for n := 0; n < len(tok); n++ {
			if _, err := ParseToken(tok[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: truncated to %d: err = %v", name, n, err)
			}
		}
		for _, extra := range []string{"A", "AA", "=", "\n", " "} {
			if _, err := ParseToken(tok + extra); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: appended %q: err = %v", name, extra, err)
			}
		}
	}
}

func TestParseTokenErrors(t *testing.T) {
	valid := sampleIdentities()["full"]
	relative := valid
	relative.Cgroup = "/a/../b"
	root := valid
	root.Cgroup = "/"
	noPID := valid
	noPID.PID = 0
	for name, s := range map[string]string{
		"empty":            "",
		"other scheme":     "abc",
		"future version":   "hl2." + strings.TrimPrefix(valid.Token(), "hl1."),
		"padding":          valid.Token() + "==",
		"unclean cgroup":   relative.Token(),
		"root cgroup":      root.Token(),
		"verified, no pid": noPID.Token(),
		"huge":             "hl1." + strings.Repeat("A", maxTokenLen),
	} {
		_, err := ParseToken(s)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
		// Only a token of another format is of an unknown version (a record of it: worker.StateUnknownVersion).
		if got, want := errors.Is(err, ErrUnknownVersion), name == "future version"; got != want {
			t.Errorf("%s: errors.Is(err, ErrUnknownVersion) = %v, want %v (err %v)", name, got, want, err)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	for _, id := range sampleIdentities() {
		f.Add(id.Token())
	}
	f.Add("hl1.")
	f.Add("hl1.AQA")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseToken(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		again, err := ParseToken(id.Token())
		if err != nil {
			t.Fatalf("re-encoded token does not parse: %v", err)
		}
		if !reflect.DeepEqual(again, id) {
			t.Fatalf("re-encoding changed the identity:\n%+v\n%+v", id, again)
		}
	})
}

func BenchmarkToken(b *testing.B) {
	id := sampleIdentities()["full"]
	b.ReportAllocs()
	for b.Loop() {
		_ = id.Token()
	}
}

func BenchmarkParseToken(b *testing.B) {
	tok := sampleIdentities()["full"].Token()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseToken(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// crc32c must be CRC-32C exactly: tokens written by earlier versions (hash/crc32) must still parse.
func TestCRC32CMatchesHashCRC32(t *testing.T) {
	table := crc32.MakeTable(crc32.Castagnoli)
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 600; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := crc32c(b), crc32.Checksum(b, table); got != want {
			t.Fatalf("len %d: crc32c = %#x, hash/crc32 = %#x", n, got, want)
		}
	}
	// The check value of the CRC-32C catalogue entry.
	if got := crc32c([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("crc32c(123456789) = %#x, want 0xe3069283", got)
	}
}
