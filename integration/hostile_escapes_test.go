package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Escape sequences from the worker (class 6 of the hostile suite): the relay between a sandboxed worker's
// pty and the caller's terminal passes what draws on the screen and drops what writes outside it (the
// clipboard, the title) or makes the terminal type into its own input (reports, answers),
// docs/security.md, "The terminal and the session".

// escapeDrawn is what an interactive program draws with: each arrives byte for byte.
var escapeDrawn = []string{
	"plain text ",
	"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x8d ", // UTF-8: two, three and four bytes
	"\x1b[1;31mred\x1b[0m",                        // SGR
	"\x1b[38;2;10;20;30mtrue\x1b[38:5:200mcolour\x1b[m",
	"\x1b[2J\x1b[H\x1b[10;5H\x1b[3A\x1b[2C\x1b[K\x1b[1J", // erase, cursor movement
	"\x1b[5;20r\x1b[r",                                   // scroll region
	"\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[?1000;1006h",    // alternate screen, cursor, bracketed paste, mouse
	"\x1b[?1006;1000l\x1b[?2004l\x1b[?25h\x1b[?1049l",
	"\x1b[4h\x1b[4l",            // insert mode
	"\x1b[2 q",                  // cursor style
	"\x1b(0qqq\x1b(B",           // line drawing charset
	"\x1b7\x1b8\x1b=\x1b>\x1bM", // save/restore cursor, keypad modes, reverse index
	"\x1b[>4;2m\x1b[>4m",        // modifyOtherKeys (vim)
	"tab\there\x08\x07\r",       // HT, BS, BEL, CR
}

// escapeDropped is what reaches outside the screen; none of it may arrive.
var escapeDropped = []string{
	"\x1b]52;c;cm0gLXJmIH4K\x07",                 // OSC 52: the caller's clipboard
	"\x1b]52;p;?\x1b\\",                          // OSC 52 query: the clipboard read back as input
	"\x1b]2;rm -rf ~\x07",                        // window title
	"\x1b]0;icon and title\x1b\\",                // icon name and title
	"\x1b[21t",                                   // report the title: typed into the terminal's input
	"\x1b[20t\x1b[18t\x1b[14t\x1b[11t",           // window reports
	"\x1b[22;0t\x1b[23;0t\x1b[8;1;1t\x1b[3;0;0t", // title stack, window resize and move
	"\x1bP$qm\x1b\\",                             // DECRQSS
	"\x1bP+q544e\x1b\\",                          // XTGETTCAP
	"\x1bPtmux;\x1b\x1b]52;c;eA==\x07\x1b\\",     // tmux passthrough
	"\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
	"\x1b[c\x1b[0c\x1b[>c\x1b[=c\x1bZ",                     // DA, DA2, DA3, DECID
	"\x1b[5n\x1b[6n\x1b[?6n",                               // DSR, CPR, DECXCPR
	"\x05",                                                 // ENQ: the answer-back
	"\x1b]10;?\x1b\\\x1b]11;?\x07\x1b]4;1;?\x07",           // colour queries
	"\x1b]4;1;#000000\x07",                                 // the caller's palette
	"\x1b[?2004$p\x1b[2$p",                                 // DECRQM
	"\x1b[>q\x1b[?u",                                       // XTVERSION, the keyboard protocol's query
	"\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\", // OSC 8 hyperlink (its text "link" stays)
	"\x1b[2h\x1b[12l",                                      // keyboard lock, local echo
	"\x1b[5i",                                              // media copy (the printer)
	"\xc2\x9b6n\xc2\x9d52;c;eA==\x07",                      // CPR and OSC 52 as C1 controls in UTF-8
}

// A sandboxed worker on the caller's terminal prints, between drawing sequences, every kind of sequence
// that acts outside the screen: on the caller's terminal (the test's pty master) the drawing arrives
// byte for byte and nothing else does: the relay must not pass every byte as it is.
func TestSandboxTerminalEscapes(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	var sent, want strings.Builder
	sent.WriteString("BEGIN>")
	want.WriteString("BEGIN>")
	for i, d := range escapeDrawn {
		sent.WriteString(escapeDropped[i%len(escapeDropped)])
		sent.WriteString(d)
		want.WriteString(d)
	}
	for _, x := range escapeDropped[len(escapeDrawn):] {
		sent.WriteString(x)
	}
	sent.WriteString("<END\n")
	want.WriteString("link<END") // the hyperlink's text is printed, its target is not
	got := escapesShown(t, e, nil, sent.String())
	if got != want.String() {
		t.Errorf("the caller's terminal got\n%q\nwant\n%q", got, want.String())
		for _, x := range escapeDropped {
			if strings.Contains(got, x) {
				t.Errorf("passed: %q", x)
			}
		}
	}
}

// With --tty-titles the worker sets the caller's window and icon titles (both endings of an OSC arrive
// as sent); its clipboard write, the title report and the other queries are still dropped.
func TestSandboxTerminalTitles(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	titles := "\x1b]2;worker: vim\x07\x1b]0;icon \xc3\xa9\x1b\\"
	got := escapesShown(t, e, []string{"--tty-titles"}, "BEGIN>"+titles+"\x1b]52;c;eA==\x07\x1b[21t\x1b[6n\x1b[c<END\n")
	if want := "BEGIN>" + titles + "<END"; got != want {
		t.Errorf("the caller's terminal got %q, want %q", got, want)
	}
}

// escapesShown runs a sandboxed worker with flags that writes sent to its terminal, and returns what the
// caller's terminal showed from "BEGIN>" to "<END".
func escapesShown(t *testing.T, e *env, flags []string, sent string) string {
	t.Helper()
	r := escapesRun(t, e, flags, sent)
	i, j := strings.Index(r.shown, "BEGIN>"), strings.Index(r.shown, "<END")
	if i < 0 || j < i {
		t.Fatalf("the worker's output did not arrive: %q", r.shown)
	}
	return r.shown[i : j+len("<END")]
}

// escapesRun runs a sandboxed worker with flags that writes sent to its terminal, on a pty of the test's
// that answers nothing, and fails the test unless it exits 0 and shows "BEGIN>" and then "<END".
func escapesRun(t *testing.T, e *env, flags []string, sent string) ptyRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox", "--scope", "none"}, flags...)
	cmd := exec.CommandContext(ctx, hlaunchBin, append(args, "--", selfBin, "child", "unhex", hex.EncodeToString([]byte(sent)))...)
	cmd.Env = e.Launcher
	r := onPTY(t, cmd, 0, 0, func(string, *os.File) string { return "" })
	if r.err != nil {
		t.Fatalf("%v: %q", r.err, r.shown)
	}
	if i, j := strings.Index(r.shown, "BEGIN>"), strings.Index(r.shown, "<END"); i < 0 || j < i {
		t.Fatalf("the worker's output did not arrive: %q", r.shown)
	}
	return r
}

// A program that waits for the answer to its primary device attributes query (fish, neovim: the end of
// their queries' answers) gets the relay's own, at once and in its own input; the query does not reach
// the caller's terminal, and nothing is left in the caller's terminal's input. A query passed on to the
// caller's terminal (here, one that answers nothing) would leave the worker waiting 10 s for nothing.
func TestSandboxTerminalAnswersDA(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox",
		"--scope", "none", "--", selfBin, "child", "query-da")
	cmd.Env = e.Launcher
	r := onPTY(t, cmd, 0, 0, func(string, *os.File) string { return "" })
	if r.err != nil {
		t.Fatalf("%v: %q", r.err, r.shown)
	}
	if want := "da:x" + hex.EncodeToString([]byte("\x1b[?62;22c")) + "\n"; !strings.Contains(r.shown, want) {
		t.Errorf("the worker's query was answered %q, want %q", r.shown, want)
	}
	if strings.Contains(r.shown, "\x1b[c") {
		t.Errorf("the query reached the caller's terminal: %q", r.shown)
	}
	if r.pending != 0 {
		t.Errorf("%d bytes were left in the caller's terminal's input", r.pending)
	}
}

// A DA query from a worker whose terminal is canonical (a shell's, where `printf '\e[c'` asks) is not
// answered: the answer would be typed into the worker's line, a shell's command, and echoed to the caller.
// The test types a line once the relay has passed the query's marker: the worker reads exactly that line,
// and the caller sees no answer echoed. On the old code the line read "\x1b[?62;22cgo\n" and the caller's
// terminal showed "^[[?62;22c" (seen in the guest lane, where the worker was still running when the relay
// answered).
func TestSandboxTerminalCanonicalDAUnanswered(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox",
		"--scope", "none", "--", selfBin, "child", "da-canonical")
	cmd.Env = e.Launcher
	typed := false
	r := onPTY(t, cmd, 0, 0, func(shown string, _ *os.File) string {
		if !typed && strings.Contains(shown, "MARK>") {
			typed = true
			return "go\n"
		}
		return ""
	})
	if r.err != nil {
		t.Fatalf("%v: %q", r.err, r.shown)
	}
	if want := "line:x" + hex.EncodeToString([]byte("go\n")) + "\n"; !strings.Contains(r.shown, want) {
		t.Errorf("the worker read %q, want the line typed alone (%q)", r.shown, want)
	}
	if strings.Contains(r.shown, "62;22c") {
		t.Errorf("the relay's answer was echoed to the caller's terminal: %q", r.shown)
	}
}

// queryDA is the child's side of TestSandboxTerminalAnswersDA: as a program does, it puts its terminal
// out of canonical mode and echo, asks, and reads the answer up to its final "c".
func queryDA() []byte {
	saved, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		return []byte("not a terminal")
	}
	raw := *saved
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(0, unix.TCSETS, &raw); err != nil {
		return []byte(err.Error())
	}
	defer unix.IoctlSetTermios(0, unix.TCSETS, saved)
	_, _ = os.Stdout.WriteString("\x1b[c")
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.HasSuffix(got, []byte("c")) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil || n == 0 {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			break
		}
		buf := make([]byte, 64)
		n, err := unix.Read(0, buf)
		if n <= 0 || err != nil {
			break
		}
		got = append(got, buf[:n]...)
	}
	return got
}

// A worker that turns on mouse, focus and paste reporting and the key encodings and exits leaves none of
// them on: at the relay's end the caller's terminal is told to turn them off, after the worker's output,
// so that it types no report or encoded key into the caller's shell. A worker that turned on none gets
// nothing after its output.
func TestSandboxTerminalRestoresInputModes(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	on := "BEGIN>\x1b[?1000;1006h\x1b[?1004h\x1b[?2004h\x1b[>1u\x1b[>4;2m<END"
	r := escapesRun(t, e, nil, on+"\n")
	if !strings.Contains(r.shown, on) {
		t.Fatalf("the caller's terminal got %q, want %q in it", r.shown, on)
	}
	after := r.shown[strings.Index(r.shown, "<END")+len("<END"):]
	for _, off := range []string{"\x1b[?1000l", "\x1b[?1006l", "\x1b[?1004l", "\x1b[?2004l", "\x1b[<99u", "\x1b[>4m"} {
		if !strings.Contains(after, off) {
			t.Errorf("after the worker's output: %q, want %q in it", after, off)
		}
	}
	r = escapesRun(t, e, nil, "BEGIN>\x1b[1m\x1b[?1049h\x1b[?1049l<END\n")
	if after := r.shown[strings.Index(r.shown, "<END")+len("<END"):]; after != "\n" {
		t.Errorf("after the output of a worker that turned on no input mode: %q, want only its newline", after)
	}
}
