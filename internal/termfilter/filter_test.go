package termfilter

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// filterCase is one input and what of it passes.
type filterCase struct {
	name, in, want string
}

// passCases pass byte for byte: what an interactive program draws with.
var passCases = []filterCase{
	{"text", "hello, world", "hello, world"},
	{"C0 within the screen", "a\bb\tc\nd\re\x07f\x0bg\x0ch\x0ei\x0fj", "a\bb\tc\nd\re\x07f\x0bg\x0ch\x0ei\x0fj"},
	{"UTF-8", "h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d \xef\xbf\xbd \xc2\xa0", "h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d \xef\xbf\xbd \xc2\xa0"},
	{"SGR", "\x1b[m\x1b[0m\x1b[1;4;31;42m\x1b[38;5;200m\x1b[38;2;1;2;3m\x1b[38:2::1:2:3m\x1b[4:3m", ""},
	{"cursor", "\x1b[A\x1b[2B\x1b[3C\x1b[4D\x1b[E\x1b[F\x1b[7G\x1b[H\x1b[5;6H\x1b[5;6f\x1b[d\x1b[3`\x1b[a\x1b[e", ""},
	{"erase and edit", "\x1b[J\x1b[2J\x1b[3J\x1b[K\x1b[1K\x1b[@\x1b[2L\x1b[M\x1b[P\x1b[X\x1b[5b", ""},
	{"scroll and tabs", "\x1b[S\x1b[2T\x1b[3;20r\x1b[r\x1b[I\x1b[Z\x1b[g\x1b[3g\x1b[s\x1b[u\x1b[2;70s", ""},
	{"ANSI modes", "\x1b[4h\x1b[4l\x1b[20h\x1b[4;20l", ""},
	{"DEC private modes", "\x1b[?1049h\x1b[?1049l\x1b[?25l\x1b[?2004h\x1b[?1000;1002;1006h\x1b[?1004h\x1b[?1h\x1b[?7l\x1b[?2026h", ""},
	{"DEC private save and erase", "\x1b[?1049s\x1b[?1049r\x1b[?J\x1b[?2K", ""},
	{"keys", "\x1b[>4;2m\x1b[>4m\x1b[>4n\x1b[>1u\x1b[<u\x1b[=1;1u", ""},
	{"cursor style, soft reset", "\x1b[2 q\x1b[ q\x1b[!p", ""},
	{"ESC", "\x1b7\x1b8\x1b=\x1b>\x1bD\x1bE\x1bH\x1bM\x1bN\x1bO\x1bn\x1bo\x1b|\x1b}\x1b~\x1bc", ""},
	{"charsets and line sizes", "\x1b(0\x1b(B\x1b)0\x1b*A\x1b+B\x1b-A\x1b(%5\x1b#3\x1b#4\x1b#5\x1b#6\x1b#8", ""},
}

// dropCases lose what acts outside the screen.
var dropCases = []filterCase{
	{"OSC 52 clipboard", "a\x1b]52;c;cm0gLXJmIH4K\x07b\x1b]52;p;?\x1b\\c", "abc"},
	{"titles", "a\x1b]0;x\x07b\x1b]1;y\x1b\\c\x1b]2;z\x07d", "abcd"},
	{"title report", "a\x1b[21tb\x1b[20t", "ab"},
	{"window ops and reports", "\x1b[1t\x1b[2t\x1b[3;1;1t\x1b[4;1;1t\x1b[8;1;1t\x1b[9;1t\x1b[11t\x1b[13t\x1b[14t\x1b[15t\x1b[16t\x1b[18t\x1b[19t\x1b[22;0t\x1b[23;0t\x1b[48t", ""},
	{"title modes", "\x1b[>0;1t\x1b[>2T", ""},
	{"DA", "a\x1b[cb\x1b[0cc\x1b[>cd\x1b[>0ce\x1b[=cf\x1bZg", "abcdefg"},
	{"DSR CPR", "\x1b[5n\x1b[6n\x1b[?6n\x1b[?15n\x1b[?25n\x1b[?26n\x1b[?996n", ""},
	{"DECRQM", "\x1b[2$p\x1b[?2004$p", ""},
	{"DECRQSS XTGETTCAP", "a\x1bP$qm\x1b\\b\x1bP+q544e;636f\x1b\\c", "abc"},
	{"sixel", "a\x1bPq#0;2;0;0;0#0~~@@vv@@~~$-\x1b\\b", "ab"},
	{"tmux passthrough", "a\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\b", "ab"},
	{"APC PM SOS", "a\x1b_Gf=24;AAAA\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d", "abcd"},
	{"ENQ and other C0", "a\x05b\x00c\x01\x02\x03\x04\x06\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1c\x1d\x1e\x1fd\x7fe", "abcde"},
	{"colour queries and sets", "a\x1b]10;?\x1b\\b\x1b]11;?\x07c\x1b]4;1;?\x07d\x1b]4;1;#000\x07e\x1b]104\x07f\x1b]12;red\x07g", "abcdefg"},
	{"hyperlink", "\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\", "link"},
	{"OSC 7 notifications", "\x1b]7;file://h/x\x07\x1b]9;hi\x07\x1b]777;notify;a;b\x07\x1b]1337;File=x\x07", ""},
	{"XTVERSION, key queries", "\x1b[>q\x1b[>0q\x1b[?u\x1b[?4m", ""},
	{"keyboard lock, echo, media copy, LEDs", "\x1b[2h\x1b[12l\x1b[2;4h\x1b[h\x1b[5i\x1b[?5i\x1b[1q\x1b[x", ""},
	{"page size, checksum, conformance", "\x1b[80$|\x1b[24*|\x1b[1;1;1;1;1;1*y\x1b[62;1\"p\x1b[1$w\x1b[1$u", ""},
	{"7/8-bit reports, leaving UTF-8", "\x1b G\x1b F\x1b%@\x1b%G", ""},
	{"mouse highlight tracking", "\x1b[1;2;3;4;5T", ""},
	{"C1 raw: dropped alone", "a\x9b6nb\x9d52;c;eA==\x07c\x90$qm\x9cd\x85e\x9cf", "a6nb52;c;eA==\x07c$qmdef"},
	{"C1 in UTF-8", "a\xc2\x9b6nb\xc2\x9d52;c;eA==\x07c\xc2\x90$qm\xc2\x9cd\xc2\x85e", "abcde"},
	{"invalid UTF-8", "a\xc0\xafb\xe0\x80\xafc\xed\xa0\x80d\xf4\x90\x80\x80e\xffg\x80h\xe2\x82i", "abcdeghi"},
	{"a string's end is ST, or BEL for OSC", "a\x1bPx\x07y\x1b\\b", "ab"},
	{"ESC ends a string and begins a sequence", "a\x1b]52;c;x\x1b[1mb", "a\x1b[1mb"},
	{"CAN and SUB end a sequence", "a\x1b[6\x18n\x1b]52;x\x1ab", "anb"},
	{"ESC restarts", "a\x1b\x1b[1mb\x1b[1\x1b[2mc", "a\x1b[1mb\x1b[2mc"},
	{"C0 in a sequence is dropped, the sequence kept", "\x1b[1\n;2H", "\x1b[1;2H"},
	{"malformed CSI", "a\x1b[1?hb\x1b[1 1mc\x1b[1 !qd", "abcd"},
	{"ESC then non-ASCII", "a\x1b\xc3\xa9b", "a\xc3\xa9b"},
	{"too long a CSI", "a\x1b[" + strings.Repeat("1;", maxCSI) + "mb", "ab"},
	{"a CSI at its bound", "a\x1b[" + strings.Repeat("1", maxCSI-3) + "mb", "a\x1b[" + strings.Repeat("1", maxCSI-3) + "mb"},
	{"a CSI one over", "a\x1b[" + strings.Repeat("1", maxCSI-2) + "mb", "ab"},
}

// TestFilterTable checks each case in one call, byte by byte, and with the input split in every place.
func TestFilterTable(t *testing.T) {
	for _, c := range append(append([]filterCase{}, passCases...), dropCases...) {
		want := c.want
		if want == "" && strings.Contains(c.in, "\x1b") && isPass(c) {
			want = c.in
		}
		t.Run(c.name, func(t *testing.T) {
			if got := New(Options{}).Append(nil, []byte(c.in)); string(got) != want {
				t.Errorf("%q: got %q, want %q", c.in, got, want)
			}
			f, got := New(Options{}), []byte(nil)
			for i := range len(c.in) {
				got = f.Append(got, []byte{c.in[i]})
			}
			if string(got) != want {
				t.Errorf("%q byte by byte: got %q, want %q", c.in, got, want)
			}
			for i := range len(c.in) {
				f := New(Options{})
				got := f.Append(f.Append(nil, []byte(c.in[:i])), []byte(c.in[i:]))
				if string(got) != want {
					t.Errorf("%q split at %d: got %q, want %q", c.in, i, got, want)
				}
			}
		})
	}
}

func isPass(c filterCase) bool {
	for _, p := range passCases {
		if p.name == c.name {
			return true
		}
	}
	return false
}

// With Options.Titles the title sequences pass, in both endings; a title with a control character or
// over the bound, and every other OSC, are still dropped.
func TestFilterTitles(t *testing.T) {
	long := "\x1b]2;" + strings.Repeat("x", maxTitle) + "\x07"
	for _, c := range []filterCase{
		{"titles", "a\x1b]0;x\x07b\x1b]1;y\x1b\\c\x1b]2;z \xc3\xa9?\x07d", "a\x1b]0;x\x07b\x1b]1;y\x1b\\c\x1b]2;z \xc3\xa9?\x07d"},
		{"empty title", "\x1b]2;\x07", "\x1b]2;\x07"},
		{"control in a title", "a\x1b]2;x\ny\x07b\x1b]2;x\xc2\x9by\x07c\x1b]2;\x9c\x07d\x1b]2;\xff\x07e", "abcde"},
		{"too long", "a" + long + "b", "ab"},
		{"other OSC", "a\x1b]52;c;eA==\x07b\x1b]21;x\x07c\x1b]l;x\x1b\\d\x1b]22;x\x07e", "abcde"},
		{"ESC ends it unsent", "a\x1b]2;x\x1b[1mb", "a\x1b[1mb"},
		{"still dropped", "\x1b[21t\x1b[c\x1b[6n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := New(Options{Titles: true}).Append(nil, []byte(c.in)); string(got) != c.want {
				t.Errorf("%q: got %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// Appending to a slice with room allocates nothing, text or sequences.
func TestFilterAllocs(t *testing.T) {
	in := []byte(strings.Repeat("text \x1b[1;31mred\x1b[m \xe2\x82\xac\x1b]52;c;eA==\x07\x1b[6n\r\n", 50))
	f, dst := New(Options{Titles: true}), make([]byte, 0, len(in))
	if n := testing.AllocsPerRun(100, func() { dst = f.Append(dst[:0], in) }); n != 0 {
		t.Fatalf("%v allocations per Append", n)
	}
}

// A Writer writes what passes and reports the whole input as written; a write error is the writer's.
// Each primary device attributes query, split or not, is answered to the answer writer, once, and
// nothing else is: not DA2, DA3 or a DA with another parameter.
func TestWriter(t *testing.T) {
	var b, answers bytes.Buffer
	w := NewWriter(&b, &answers, Options{})
	for _, s := range []string{"a\x1b]52;c;", "eA==\x07b\x1b[", "1mc\x1b[6", "n\x1b[", "cd\x1b[0c\x1b[>c\x1b[=c\x1b[1c\x1b[?c"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q): %d, %v", s, n, err)
		}
	}
	if b.String() != "ab\x1b[1mcd" {
		t.Fatalf("wrote %q", b.String())
	}
	if answers.String() != DAAnswer+DAAnswer {
		t.Fatalf("answered %q, want DAAnswer twice", answers.String())
	}
	if n := New(Options{}).TakeDA(); n != 0 {
		t.Fatalf("a new Filter has %d queries", n)
	}
	boom := errors.New("boom")
	if n, err := NewWriter(&b, errWriter{boom}, Options{}).Write([]byte("\x1b[c")); n != 3 || err != nil {
		t.Fatalf("an answer that cannot be written: %d, %v", n, err)
	}
	w = NewWriter(errWriter{boom}, nil, Options{})
	if n, err := w.Write([]byte("\x1b[6n")); n != 4 || err != nil {
		t.Fatalf("all dropped: %d, %v", n, err)
	}
	if n, err := w.Write([]byte("x")); n != 0 || !errors.Is(err, boom) {
		t.Fatalf("a failed write: %d, %v", n, err)
	}
}

type errWriter struct{ err error }

func (e errWriter) Write([]byte) (int, error) { return 0, e.err }

// restoreReporting is what AppendRestore writes for the reporting modes.
const restoreReporting = "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l\x1b[?2004l\x1b[?2048l"

// The input modes a stream turned on are turned off at its end, and only they: a stream that set none
// (or only modes that leave input alone, or whose setting was dropped) gets nothing.
func TestFilterRestore(t *testing.T) {
	for _, c := range []filterCase{
		{"none", "text\x1b[1m\x1b[?1049h\x1b[?25l\x1b[?1h\x1b[?1000l", ""},
		{"mouse", "\x1b[?1000;1006h", restoreReporting},
		{"focus among others", "\x1b[?25;1004h", restoreReporting},
		{"bracketed paste", "\x1b[?2004h", restoreReporting},
		{"restored from a save", "\x1b[?1002r", restoreReporting},
		{"restore all", "\x1b[?r", restoreReporting},
		{"keyboard protocol", "\x1b[>1u", "\x1b[<99u"},
		{"keyboard protocol set", "\x1b[=5;1u", "\x1b[<99u"},
		{"modifyOtherKeys", "\x1b[>4;2m", "\x1b[>4m"},
		{"all", "\x1b[>4;2m\x1b[>1u\x1b[?9h", restoreReporting + "\x1b[<99u\x1b[>4m"},
		{"a dropped setting", "\x1b[?1000\x18h\x1b[?1000$h\x1b[?1000 h", ""},
		{"held, not passed", "\x1b[?1000", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := New(Options{})
			f.Append(nil, []byte(c.in))
			if got := f.AppendRestore(nil); string(got) != c.want {
				t.Errorf("%q: restore %q, want %q", c.in, got, c.want)
			}
		})
	}
	var b bytes.Buffer
	w := NewWriter(&b, nil, Options{})
	_, _ = w.Write([]byte("x\x1b[?1000h"))
	if err := w.Close(); err != nil || b.String() != "x\x1b[?1000h"+restoreReporting {
		t.Fatalf("Close: %v, wrote %q", err, b.String())
	}
}
