package profile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// kv is a compact expected entry for the tokenizer tables.
type kv struct {
	k, v string
	line int
}

func entriesOf(t *testing.T, in string) []kv {
	t.Helper()
	got, err := ParseDotenv(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ParseDotenv(%q): %v", in, err)
	}
	out := []kv{}
	for _, e := range got {
		out = append(out, kv{e.Key, e.Value, e.Line})
	}
	return out
}

// TestParseDotenvRules has one or more rows for every rule of the hermes tokenizer in docs/hermes-contract.md.
func TestParseDotenvRules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []kv
	}{
		// Reading and decoding.
		{"empty file", "", nil},
		{"utf-8 BOM stripped", "\xEF\xBB\xBFKEY=v\n", []kv{{"KEY", "v", 1}}},
		{"only one BOM stripped", "\xEF\xBB\xBF\xEF\xBB\xBFKEY=v", []kv{{"\uFEFFKEY", "v", 1}}},
		{"utf-8 value", "K=caf\xc3\xa9\n", []kv{{"K", "café", 1}}},

		// Lines.
		{"no trailing newline", "A=1", []kv{{"A", "1", 1}}},
		{"CRLF", "A=1\r\nB=2\r\n", []kv{{"A", "1", 1}, {"B", "2", 2}}},
		{"lone CR", "A=1\rB=2", []kv{{"A", "1", 1}, {"B", "2", 2}}},
		{"vertical tab and form feed split", "A=1\vB=2\fC=3", []kv{{"A", "1", 1}, {"B", "2", 2}, {"C", "3", 3}}},
		{"file separators split", "A=1\x1cB=2\x1dC=3\x1eD=4", []kv{{"A", "1", 1}, {"B", "2", 2}, {"C", "3", 3}, {"D", "4", 4}}},
		{"unit separator does not split but is stripped", "A=1\x1f", []kv{{"A", "1", 1}}},
		{"U+2028 and U+2029 split", "A=1\u2028B=2\u2029C=3", []kv{{"A", "1", 1}, {"B", "2", 2}, {"C", "3", 3}}},
		{"utf-8 NEL splits", "A=1\u0085B=2", []kv{{"A", "1", 1}, {"B", "2", 2}}},
		{"line trimmed", "  \tA=1  \n", []kv{{"A", "1", 1}}},
		{"empty and blank lines skipped", "\n   \n\t\nA=1\n", []kv{{"A", "1", 4}}},
		{"comment lines skipped", "# A=1\n   # B=2\nC=3", []kv{{"C", "3", 3}}},
		{"no multi-line values", "A=\"one\ntwo\"", []kv{{"A", "\"one", 1}}},

		// export, split, key.
		{"export dropped", "export A=1", []kv{{"A", "1", 1}}},
		{"export with extra spaces", "export    A=1", []kv{{"A", "1", 1}}},
		{"export needs a space", "exportA=1", []kv{{"exportA", "1", 1}}},
		{"export with tab is part of the key", "export\tA=1", []kv{{"export\tA", "1", 1}}},
		{"export then comment-looking key", "export #A=1", []kv{{"#A", "1", 1}}},
		{"export alone is not an assignment", "export", nil},
		{"split at first =", "A=b=c", []kv{{"A", "b=c", 1}}},
		{"key trimmed", "  A  =1", []kv{{"A", "1", 1}}},
		{"key keeps inner space", "A B=1", []kv{{"A B", "1", 1}}},
		{"lower-case key kept", "hermes_model=x", []kv{{"hermes_model", "x", 1}}},
		{"no = skipped", "JUSTAWORD\nA=1", []kv{{"A", "1", 2}}},
		{"empty key skipped", "=1\n  =2\nA=3", []kv{{"A", "3", 3}}},
		{"empty value", "A=", []kv{{"A", "", 1}}},
		{"empty value with spaces", "A=   ", []kv{{"A", "", 1}}},
		{"duplicates kept in order", "A=1\nA=2", []kv{{"A", "1", 1}, {"A", "2", 2}}},

		// Inline comments, unquoted.
		{"bare trimmed", "A=  hello world  ", []kv{{"A", "hello world", 1}}},
		{"bare hash without space stays", "A=foo#bar", []kv{{"A", "foo#bar", 1}}},
		{"bare space-hash cuts", "A=value # comment", []kv{{"A", "value", 1}}},
		{"bare tab-hash cuts", "A=value\t#comment", []kv{{"A", "value", 1}}},
		{"bare several spaces before hash", "A=v   #c", []kv{{"A", "v", 1}}},
		{"bare first space-hash wins", "A=a #b #c", []kv{{"A", "a", 1}}},
		{"bare leading hash kept", "A=#leading", []kv{{"A", "#leading", 1}}},
		{"bare leading hash then comment", "A=#x #y", []kv{{"A", "#x", 1}}},
		{"bare comment after = is the value (value is stripped first)", "A= # c", []kv{{"A", "# c", 1}}},
		{"bare NBSP before hash cuts", "A=v\u00a0#c", []kv{{"A", "v", 1}}},
		{"bare unicode space before hash cuts", "A=v\u3000#c", []kv{{"A", "v", 1}}},

		// Double quotes.
		{"double quoted", `A="hello world"`, []kv{{"A", "hello world", 1}}},
		{"double quoted hash inside", `A="has # inside" # trailing`, []kv{{"A", "has # inside", 1}}},
		{"double quoted comment no space", `A="x"#c`, []kv{{"A", "x", 1}}},
		{"double quoted escaped quote", `A="say \"hi\""`, []kv{{"A", `say "hi"`, 1}}},
		{"double quoted escaped backslash", `A="c:\\dir"`, []kv{{"A", `c:\dir`, 1}}},
		{"double quoted other escapes literal", `A="a\nb\tc"`, []kv{{"A", `a\nb\tc`, 1}}},
		{"double quoted no interpolation", `A="${HOME}"`, []kv{{"A", "${HOME}", 1}}},
		{"double quoted escaped quote then comment", `A="a\"b" # c`, []kv{{"A", `a"b`, 1}}},
		{"double quoted backslash pair before close", `A="a\\" # c`, []kv{{"A", `a\`, 1}}},
		{"double quoted junk after close kept", `A="a" junk`, []kv{{"A", `"a" junk`, 1}}},
		{"double quoted junk ending in quote", `A="a" "b"`, []kv{{"A", `a" "b`, 1}}},
		{"double quoted empty", `A=""`, []kv{{"A", "", 1}}},
		{"double quoted spaces kept", `A="  x  "`, []kv{{"A", "  x  ", 1}}},
		{"double unterminated kept", `A="abc`, []kv{{"A", `"abc`, 1}}},
		{"double unterminated with hash kept", `A="abc # d`, []kv{{"A", `"abc # d`, 1}}},
		{"double escaped close is unterminated", `A="abc\"`, []kv{{"A", `abc\`, 1}}},
		{"single double quote", `A="`, []kv{{"A", `"`, 1}}},
		{"escaped multibyte character", "A=\"\\é\" # c", []kv{{"A", `\é`, 1}}},

		// Single quotes.
		{"single quoted", `A='hello world'`, []kv{{"A", "hello world", 1}}},
		{"single quoted literal backslashes", `A='a\'`, []kv{{"A", `a\`, 1}}},
		{"single quoted escaped-looking quote", `A='a\"b'`, []kv{{"A", `a\"b`, 1}}},
		{"single quoted hash inside", `A='x # y' # z`, []kv{{"A", "x # y", 1}}},
		{"single quoted no interpolation", `A='$HOME'`, []kv{{"A", "$HOME", 1}}},
		{"single unterminated kept", `A='abc`, []kv{{"A", `'abc`, 1}}},
		{"mismatched quotes literal", `A='abc"`, []kv{{"A", `'abc"`, 1}}},
		{"quote in the middle literal", `A=ab"c"`, []kv{{"A", `ab"c"`, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := entriesOf(t, tt.in)
			want := tt.want
			if want == nil {
				want = []kv{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ParseDotenv(%q)\n got %+v\nwant %+v", tt.in, got, want)
			}
		})
	}
}

// ParseDotenv is parseDotenv over a reader, for the table tests and the fuzz target.
func ParseDotenv(r io.Reader) ([]DotenvEntry, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parseDotenv(data)
}

// ReadDotenv is readDotenv without the owner.
func ReadDotenv(p *Profile) ([]DotenvEntry, error) {
	entries, _, err := readDotenv(p)
	return entries, err
}

// mkProfile creates <root>/profiles/<name> (or the root for default) and writes its .env when env != "".
func mkProfile(t testing.TB, root, name, env string) *Profile {
	t.Helper()
	home := root
	if name != DefaultProfile {
		home = filepath.Join(root, "profiles", name)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if env != "" {
		if err := os.WriteFile(filepath.Join(home, ".env"), []byte(env), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Open(root, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadDotenv(t *testing.T) {
	root := t.TempDir()
	b := mkProfile(t, root, "b", "B_MARKER=b\nexport K='v'\n")
	got, err := ReadDotenv(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []DotenvEntry{{"B_MARKER", "b", 1}, {"K", "v", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}

	empty := mkProfile(t, root, "empty", "")
	if got, err := ReadDotenv(empty); err != nil || len(got) != 0 {
		t.Fatalf("missing .env: got %v, %v; want empty, nil", got, err)
	}
}

func TestReadDotenvUnreadable(t *testing.T) {
	root := t.TempDir()
	dir := mkProfile(t, root, "dir", "")
	if err := os.Mkdir(dir.EnvFile(), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := mkProfile(t, root, "fifo", "")
	if err := mkfifo(fifo.EnvFile()); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	huge := mkProfile(t, root, "huge", "")
	if err := os.WriteFile(huge.EnvFile(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge.EnvFile(), maxDotenvSize+1); err != nil {
		t.Fatal(err)
	}
	profiles := []*Profile{dir, fifo, huge}
	if os.Geteuid() == 0 {
		// A device node planted as .env (a root worker could make one): refused from fstat on an O_PATH
		// descriptor, without ever being opened for reading.
		dev := mkProfile(t, root, "dev", "")
		if err := syscall.Mknod(dev.EnvFile(), syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
			t.Fatal(err)
		}
		profiles = append(profiles, dev)
	}
	for _, p := range profiles {
		_, err := ReadDotenv(p)
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p.EnvFile()) {
			t.Errorf("%s: err = %v, want ErrUnreadable naming the file", p.Name, err)
		}
	}
}

func TestReadDotenvSymlinks(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.WriteFile(outside, []byte("A_KEY=stolen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := mkProfile(t, root, "a", "A_KEY=a\n")
	tests := []struct {
		name   string
		target func(p *Profile) string
		want   error
		values int
	}{
		// Even a link inside the home is refused: the worker can re-point it, or swap a directory it
		// passes through for a link to another profile, between any check and the open.
		{"inside the home", func(p *Profile) string {
			in := filepath.Join(p.Home, "real.env")
			if err := os.WriteFile(in, []byte("X=1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return "real.env"
		}, ErrSymlinkEscape, 0},
		{"outside, absolute", func(*Profile) string { return outside }, ErrSymlinkEscape, 0},
		{"another profile's .env", func(*Profile) string { return a.EnvFile() }, ErrSymlinkEscape, 0},
		{"relative escape", func(*Profile) string { return "../a/.env" }, ErrSymlinkEscape, 0},
		{"dangling outside", func(*Profile) string { return "/nonexistent/x.env" }, ErrSymlinkEscape, 0},
		{"dangling inside", func(*Profile) string { return "nothere.env" }, ErrSymlinkEscape, 0},
		{"link to the home itself", func(p *Profile) string { return "." }, ErrSymlinkEscape, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mkProfile(t, root, "p"+string(rune('a'+i)), "")
			if err := os.Symlink(tt.target(p), p.EnvFile()); err != nil {
				t.Fatal(err)
			}
			got, err := ReadDotenv(p)
			if tt.want == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.want != nil && (!errors.Is(err, tt.want) || !strings.Contains(err.Error(), p.EnvFile())) {
				t.Fatalf("err = %v, want %v naming %s", err, tt.want, p.EnvFile())
			}
			if len(got) != tt.values {
				t.Fatalf("got %d entries, want %d", len(got), tt.values)
			}
		})
	}
}

// TestParseDotenvRefusesNonUTF8: a .env that is not UTF-8 is refused, never re-encoded, and the error
// names the byte offset in the file (a BOM counts). hermes reads such a file as empty.
func TestParseDotenvRefusesNonUTF8(t *testing.T) {
	for _, tt := range []struct {
		in  string
		off int
	}{
		{"K=caf\xe9\n", 5},
		{"\xEF\xBB\xBFA=\xff\nB=x", 5},
		{"A=1\nGH\xa0TOKEN=x\n", 6},
		{"A=\xed\xa0\x80", 2}, // a UTF-8-encoded surrogate is not UTF-8
		{"A=\xc0\xaf", 2},     // overlong
		{"A=ok\n\xe2\x80", 5}, // truncated at the end
		{"\xEF\xBB\xBF\xEF\xBB", 3},
	} {
		got, err := ParseDotenv(strings.NewReader(tt.in))
		if !errors.Is(err, ErrNotUTF8) || got != nil || !strings.Contains(err.Error(), fmt.Sprintf("at byte %d:", tt.off)) {
			t.Errorf("ParseDotenv(%q) = %v, %v; want ErrNotUTF8 at byte %d", tt.in, got, err, tt.off)
		}
	}
	p := mkProfile(t, t.TempDir(), "b", "B=1\nSUDO_PASSWORD\xff=x\n")
	_, err := ReadDotenv(p)
	if !errors.Is(err, ErrNotUTF8) || !strings.HasPrefix(err.Error(), p.EnvFile()+": ") || !strings.Contains(err.Error(), "at byte 17") {
		t.Fatalf("ReadDotenv: %v, want ErrNotUTF8 naming %s and byte 17", err, p.EnvFile())
	}
}
