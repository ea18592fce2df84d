package fingerprint

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
)

// Token format (version 1):
//
//	"hl1." + base64url-unpadded( payload || crc32c(payload) big-endian )
//	payload = version(1 byte, =1) flags(1 byte, bit 0 = unverified, others 0)
//	          id(MachineID) id(BootID) uvarint(PID1Start)
//	          str(Cgroup) uvarint(CgroupID) uvarint(PID) uvarint(Start)
//	          str(Unit) id(InvocationID) str(Reason)
//	str = uvarint(len) bytes
//	id  = kind byte: 0 = str, 1 = 16 bytes shown as 32 lowercase hex (machine id, InvocationID),
//	      2 = 16 bytes shown as a lowercase UUID (boot id). A kind is used only when it re-renders the
//	      string exactly, so every identity round-trips.
//
// The checksum makes any altered or truncated token fail to parse: CRC-32C catches every error burst up to
// 32 bits, and changing one character of the text changes at most 6 bits. It is not a signature and needs
// none: a token grants nothing by itself, Verify checks every fact against the live system.
const tokenPrefix = "hl1."

const (
	flagUnverified = 1 << 0

	idString = 0
	idHex    = 1
	idUUID   = 2

	maxField    = 4096      // longest string field
	maxTokenLen = 4 * 16384 // longest token text accepted
)

var tokenEncoding = base64.RawURLEncoding.Strict()

// crc32c is the CRC-32C (Castagnoli) checksum of b, the same value as hash/crc32 with crc32.Castagnoli,
// computed bit by bit. hash/crc32 first builds tables for its SSE4.2 path: 1,024 CRCs over up to 1,344
// zero bytes, 0.1-0.2 ms, paid once per process. Every shim encodes one token and exits, and that set-up
// was 5% of a shim's CPU in perf; a token's payload is about 100 bytes, which this loop checks in about
// a microsecond, with no table and no state.
func crc32c(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for range 8 {
			crc = crc>>1 ^ (0x82f63b78 & -(crc & 1)) // 0x82f63b78: the Castagnoli polynomial, reversed
		}
	}
	return ^crc
}

// Token encodes i as a versioned, copy-pasteable string ("hl1." + base64url). An unverified identity
// encodes that, with its reason. Token always writes FormatVersion.
func (i Identity) Token() string {
	b := make([]byte, 0, 160)
	b = append(b, FormatVersion)
	var flags byte
	if i.Unverified {
		flags |= flagUnverified
	}
	b = append(b, flags)
	b = appendID(b, i.MachineID, idHex)
	b = appendID(b, i.BootID, idUUID)
	b = binary.AppendUvarint(b, i.PID1Start)
	b = appendStr(b, i.Cgroup)
	b = binary.AppendUvarint(b, i.CgroupID)
	b = binary.AppendUvarint(b, uint64(max(i.PID, 0)))
	b = binary.AppendUvarint(b, i.Start)
	b = appendStr(b, i.Unit)
	b = appendID(b, i.InvocationID, idHex)
	b = appendStr(b, i.Reason)
	b = binary.BigEndian.AppendUint32(b, crc32c(b))
	out := make([]byte, len(tokenPrefix)+tokenEncoding.EncodedLen(len(b)))
	copy(out, tokenPrefix)
	tokenEncoding.Encode(out[len(tokenPrefix):], b)
	return string(out)
}

// ParseToken decodes a token made by Token. Anything else - another version, bad base64, a checksum
// mismatch, truncation, trailing bytes, an out-of-range field - is ErrMalformed with a message saying what.
// A well-formed token of another format (version prefix, payload version or flags this build does not
// know: a newer hlaunch's) is ErrUnknownVersion as well.
func ParseToken(s string) (Identity, error) {
	if len(s) > maxTokenLen {
		return Identity{}, fmt.Errorf("%w: token is %d bytes, longer than %d", ErrMalformed, len(s), maxTokenLen)
	}
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		if strings.HasPrefix(s, "hl") && strings.Contains(s, ".") {
			return Identity{}, fmt.Errorf("%w: token version %q is not supported (want %q)", unknownVersion{}, s[:strings.IndexByte(s, '.')], "hl1")
		}
		return Identity{}, fmt.Errorf("%w: not an hlaunch token (want prefix %q)", ErrMalformed, tokenPrefix)
	}
	// encoding/base64 skips '\r' and '\n'; a token is one exact string, so check the alphabet first.
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return Identity{}, fmt.Errorf("%w: token has %q at offset %d, outside base64url", ErrMalformed, c, len(tokenPrefix)+i)
		}
	}
	b, err := tokenEncoding.DecodeString(rest)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: token is not base64url: %v", ErrMalformed, err)
	}
	if len(b) < 6 {
		return Identity{}, fmt.Errorf("%w: token is truncated", ErrMalformed)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32c(body) != sum {
		return Identity{}, fmt.Errorf("%w: token checksum mismatch (altered or truncated)", ErrMalformed)
	}
	d := decoder{b: body}
	if v := d.byte(); v != FormatVersion {
		return Identity{}, fmt.Errorf("%w: token payload version %d is not supported", unknownVersion{}, v)
	}
	flags := d.byte()
	if flags&^flagUnverified != 0 {
		return Identity{}, fmt.Errorf("%w: token has unknown flags %#x", unknownVersion{}, flags)
	}
	id := Identity{Version: FormatVersion, Unverified: flags&flagUnverified != 0}
	id.MachineID = d.id("machine id", idHex)
	id.BootID = d.id("boot id", idUUID)
	id.PID1Start = d.uvarint("pid1 start")
	id.Cgroup = d.str("cgroup")
	id.CgroupID = d.uvarint("cgroup id")
	pid := d.uvarint("pid")
	id.Start = d.uvarint("start")
	id.Unit = d.str("unit")
	id.InvocationID = d.id("invocation id", idHex)
	id.Reason = d.str("reason")
	if d.err != nil {
		return Identity{}, d.err
	}
	if len(d.b) != 0 {
		return Identity{}, fmt.Errorf("%w: token has %d trailing bytes", ErrMalformed, len(d.b))
	}
	if pid > math.MaxInt32 {
		return Identity{}, fmt.Errorf("%w: token pid %d out of range", ErrMalformed, pid)
	}
	id.PID = int(pid)
	if id.Cgroup != "" {
		if c, err := cleanCgroupPath(id.Cgroup); err != nil || c != id.Cgroup {
			return Identity{}, fmt.Errorf("%w: token cgroup path %q is not canonical", ErrMalformed, id.Cgroup)
		}
	}
	if !id.Unverified && (id.PID <= 0 || id.BootID == "" || id.MachineID == "") {
		return Identity{}, fmt.Errorf("%w: verified token lacks pid, boot id or machine id", ErrMalformed)
	}
	return id, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendID stores s in 16 bytes when kind renders it back exactly, else as a string.
func appendID(b []byte, s string, kind byte) []byte {
	if raw, ok := compactID(s, kind); ok {
		b = append(b, kind)
		return append(b, raw[:]...)
	}
	b = append(b, idString)
	return appendStr(b, s)
}

// compactID returns the 16 bytes of s when s has kind's canonical shape (lowercase hex; dashes at the UUID
// positions for idUUID), so that renderID gives s back exactly.
func compactID(s string, kind byte) ([16]byte, bool) {
	var raw [16]byte
	want := 32
	if kind == idUUID {
		want = 36
	}
	if len(s) != want {
		return raw, false
	}
	j := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if kind == idUUID && (i == 8 || i == 13 || i == 18 || i == 23) {
			if c != '-' {
				return raw, false
			}
			continue
		}
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		default:
			return raw, false
		}
		raw[j/2] |= v << (4 * (1 - j%2))
		j++
	}
	return raw, true
}

func renderID(raw [16]byte, kind byte) string {
	h := hex.EncodeToString(raw[:])
	if kind == idUUID {
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	}
	return h
}

// decoder reads payload fields, keeping the first error so the caller checks once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(field, what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: token %s: %s", ErrMalformed, field, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("header", "truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(field string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(field, "bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(field string) string {
	n := d.uvarint(field)
	if d.err != nil {
		return ""
	}
	if n > maxField || n > uint64(len(d.b)) {
		d.fail(field, "length out of range")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) id(field string, compact byte) string {
	if d.err != nil {
		return ""
	}
	kind := d.byte()
	switch kind {
	case idString:
		s := d.str(field)
		// A string that the compact form could hold must have been written compactly; accepting it both
		// ways would let two tokens name one identity, which is harmless but makes tokens non-canonical.
		if _, ok := compactID(s, compact); ok {
			d.fail(field, "non-canonical encoding")
		}
		return s
	case compact:
		if len(d.b) < 16 {
			d.fail(field, "truncated")
			return ""
		}
		var raw [16]byte
		copy(raw[:], d.b[:16])
		d.b = d.b[16:]
		return renderID(raw, kind)
	default:
		d.fail(field, fmt.Sprintf("unknown id kind %d", kind))
		return ""
	}
}
