// Package termfilter filters what a hostile program writes to a terminal down to what draws on the
// screen. It is the relay between a sandboxed worker's pty and its caller's terminal
// (docs/security.md, "The terminal and the session", "Escape sequences from the worker"): text, UTF-8,
// the C0 controls that move within the screen and the CSI and ESC sequences that draw, set colours,
// modes and charsets pass byte for byte; whatever writes outside the screen (the clipboard, the title,
// the palette, the window, the printer) or makes the terminal type into its own input (every report and
// answer-back) is dropped. A sequence passes whole or not at all.
//
// The parser is the ECMA-48 / DEC VT500 state machine (Paul Williams' "A parser for DEC's ANSI-compatible
// video terminals", which xterm, VTE and most emulators follow). It keeps its state across calls, so the
// output does not depend on how the input was split, and holds at most a bounded sequence: a CSI or a
// title longer than its bound is dropped, not buffered. Appending allocates nothing but dst's growth.
package termfilter

// The bounds on what a Filter holds before it decides. A program's longest drawing CSI (a combined SGR
// with true colours) is well under maxCSI; a title longer than maxTitle is dropped.
const (
	maxCSI   = 256
	maxTitle = 512
)

// C0 controls and bytes the parser acts on.
const (
	bel = 0x07
	can = 0x18
	sub = 0x1a
	esc = 0x1b
	del = 0x7f
)

// state is where the parser is between bytes.
type state uint8

const (
	ground     state = iota // text
	escape                  // after ESC
	escInter                // ESC and intermediates (0x20-0x2f)
	csi                     // ESC [ and parameters, intermediates: held in buf until the final byte
	csiIgnore               // a CSI that is dropped whatever its final byte (too long, malformed, C1)
	strDrop                 // a control string (OSC, DCS, SOS, PM, APC) that is dropped
	strDropEsc              // ESC inside a dropped string: ST if a backslash follows
	title                   // OSC held in buf to pass as a title (Options.Titles)
	titleEsc                // ESC inside a held OSC
)

// Options say what a Filter passes besides the screen.
type Options struct {
	// Titles passes the sequences that set the window and icon titles (OSC 0, 1 and 2, at most 512
	// bytes of printable text). The zero value drops them: the terminal shows the title outside the
	// screen, where it can pose as the caller's own shell or host.
	Titles bool
}

// Filter is one stream's parser. Its zero value filters with the zero Options.
type Filter struct {
	opt  Options
	st   state
	osc  bool       // the dropped string is an OSC: BEL ends it too
	bad  bool       // the held title has a byte no title passes with
	need uint8      // continuation bytes still expected of the UTF-8 character in u
	lo   byte       // the lowest the next continuation byte may be (overlong and surrogate forms refused)
	hi   byte       // the highest
	nu   uint8      // bytes of the character held in u
	u    [4]byte    // a UTF-8 character of the text, passed once whole
	n    int        // bytes held in buf
	da   int        // primary device attributes queries dropped and not yet taken (TakeDA)
	left inputModes // the input modes a passed sequence may have turned on (AppendRestore)
	buf  [maxTitle]byte
}

// New returns a Filter in the ground state.
func New(opt Options) *Filter {
	return &Filter{opt: opt}
}

// Append appends to dst what of src passes and returns the extended slice. A sequence still open at the
// end of src is held (up to its bound) and passed or dropped once its end arrives in a later call; what is
// held when the stream ends is never written.
func (f *Filter) Append(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		b := src[i]
		if f.st == ground && f.need == 0 {
			// The common case: a run of printable ASCII and the controls that pass, copied at once.
			j := i
			for j < len(src) && textByte(src[j]) {
				j++
			}
			if j > i {
				dst = append(dst, src[i:j]...)
				i = j - 1
				continue
			}
		}
		if f.st == csi && b >= '0' && b <= ';' && f.n < maxCSI-1 && !(f.buf[f.n-1] >= 0x20 && f.buf[f.n-1] <= 0x2f) {
			// A run of parameter digits and separators, held at once (csi's rules for them, in bulk).
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= ';' && f.n < maxCSI-1 {
				f.buf[f.n] = src[j]
				f.n++
				j++
			}
			i = j - 1
			continue
		}
		dst = f.step(dst, b)
	}
	return dst
}

// textByte reports whether b, in the ground state, passes by itself: printable ASCII, BS, HT, LF, VT,
// FF, CR, SO, SI and BEL.
func textByte(b byte) bool {
	return (b >= 0x20 && b < del) || (b >= 0x07 && b <= 0x0f)
}

// step feeds one byte.
func (f *Filter) step(dst []byte, b byte) []byte {
	switch f.st {
	case ground:
		return f.ground(dst, b)
	case escape:
		return f.escape(dst, b)
	case escInter:
		return f.escInter(dst, b)
	case csi:
		return f.csi(dst, b)
	case csiIgnore:
		switch {
		case b >= 0x40 && b <= 0x7e:
			f.st = ground
		default:
			f.interrupt(b)
		}
	case strDrop:
		switch {
		case b == bel && f.osc, b == 0x9c:
			f.st = ground
		case b == esc:
			f.st = strDropEsc
		case b == can || b == sub:
			f.st = ground
		}
	case strDropEsc:
		if b == '\\' {
			f.st = ground
			return dst
		}
		// ESC ends the string and begins a sequence of its own.
		f.st, f.n = escape, 0
		return f.escape(dst, b)
	case title:
		return f.title(dst, b)
	case titleEsc:
		if b == '\\' {
			return f.endTitle(dst, esc, '\\')
		}
		f.st, f.n = escape, 0
		return f.escape(dst, b)
	}
	return dst
}

// TakeDA returns how many primary device attributes queries (DA: CSI c, CSI 0 c) were dropped since it
// was last called. Programs send one after their other queries and wait for its answer, which every
// terminal gives, as the end of the answers (fish, neovim): the relay answers it itself (DAAnswer).
func (f *Filter) TakeDA() int {
	n := f.da
	f.da = 0
	return n
}

// DAAnswer is the relay's own answer to a primary device attributes query: a VT220 with ANSI colour,
// claiming no capability beyond what the filter passes (no sixel, no clipboard).
const DAAnswer = "\x1b[?62;22c"

// AppendRestore appends to dst the sequences that turn off the input modes the stream may have turned on
// and returns the extended slice (dst when it turned on none): mouse, focus and resize reporting,
// bracketed paste, the keyboard protocol's flags and modifyOtherKeys. With one of them left on, the
// terminal goes on typing reports, or keys encoded for the program, into the input of whoever reads it
// next (the caller's shell). Called once the stream has ended.
func (f *Filter) AppendRestore(dst []byte) []byte {
	if f.left&reporting != 0 {
		dst = append(dst, "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l\x1b[?2004l\x1b[?2048l"...)
	}
	if f.left&keyFlags != 0 {
		dst = append(dst, "\x1b[<99u"...) // pops every entry the program pushed (the stack empties)
	}
	if f.left&modKeys != 0 {
		dst = append(dst, "\x1b[>4m"...) // modifyOtherKeys back to the terminal's own setting
	}
	return dst
}

// interrupt handles, inside a sequence that is being dropped, the bytes that end it early: ESC begins a
// new one, CAN and SUB end it. Everything else inside it is dropped with it.
func (f *Filter) interrupt(b byte) {
	switch b {
	case esc:
		f.st, f.n = escape, 0
	case can, sub:
		f.st = ground
	}
}

// ground handles a byte of text that is not in the fast path: ESC, the C0 controls that are dropped,
// DEL, UTF-8 and C1 controls.
func (f *Filter) ground(dst []byte, b byte) []byte {
	if f.need > 0 {
		if b >= f.lo && b <= f.hi {
			f.u[f.nu] = b
			f.nu++
			f.need--
			f.lo, f.hi = 0x80, 0xbf
			if f.need == 0 {
				// U+0080-U+009F are the C1 controls, in UTF-8 C2 80 to C2 9F: not text.
				if f.nu == 2 && f.u[0] == 0xc2 && f.u[1] <= 0x9f {
					f.nu = 0
					return f.c1(dst, f.u[1])
				}
				dst = append(dst, f.u[:f.nu]...)
				f.nu = 0
			}
			return dst
		}
		// Not a continuation: the character is dropped whole, and b is read afresh.
		f.need, f.nu = 0, 0
	}
	switch {
	case textByte(b):
		return append(dst, b)
	case b == esc:
		f.st = escape
	case b >= 0xc2 && b <= 0xf4:
		f.u[0], f.nu = b, 1
		f.lo, f.hi = 0x80, 0xbf
		switch {
		case b < 0xe0:
			f.need = 1
		case b < 0xf0:
			f.need = 2
			if b == 0xe0 {
				f.lo = 0xa0
			} else if b == 0xed {
				f.hi = 0x9f
			}
		default:
			f.need = 3
			if b == 0xf0 {
				f.lo = 0x90
			} else if b == 0xf4 {
				f.hi = 0x8f
			}
		}
	}
	// Everything else is dropped: NUL, ENQ (the answer-back) and the other C0 controls, DEL, a
	// continuation byte without its lead (0x80-0x9f among them: the C1 controls of a terminal that reads
	// 8-bit controls, dropped alone; what follows is text to any terminal), and bytes that are never
	// UTF-8.
	return dst
}

// c1 handles a C1 control in UTF-8 (C2 80 to C2 9F), which terminals act on as they do on ESC and its
// 7-bit form: every one is dropped, and the sequence a C1 introducer begins is dropped whole.
func (f *Filter) c1(dst []byte, b byte) []byte {
	switch b {
	case 0x9b: // CSI
		f.st = csiIgnore
	case 0x90, 0x98, 0x9d, 0x9e, 0x9f: // DCS, SOS, OSC, PM, APC
		f.st, f.osc = strDrop, b == 0x9d
	}
	return dst
}

// escape handles the byte after ESC.
func (f *Filter) escape(dst []byte, b byte) []byte {
	f.buf[0], f.n = esc, 1
	switch {
	case b == '[':
		f.buf[1], f.n = b, 2
		f.st = csi
	case b == ']':
		if f.opt.Titles {
			f.buf[1], f.n = b, 2
			f.st, f.bad = title, false
		} else {
			f.st, f.osc = strDrop, true
		}
	case b == 'P' || b == 'X' || b == '^' || b == '_': // DCS, SOS, PM, APC
		f.st, f.osc = strDrop, false
	case b >= 0x20 && b <= 0x2f:
		f.buf[1], f.n = b, 2
		f.st = escInter
	case b >= 0x30 && b <= 0x7e:
		f.st = ground
		if escPasses(0, b) {
			dst = append(dst, esc, b)
		}
	case b == esc:
		// ESC ESC: the first is dropped, the second begins the sequence.
	case b == can || b == sub:
		f.st = ground
	case b >= 0x80:
		// Not a sequence: the ESC is dropped and b read as text.
		f.st = ground
		return f.ground(dst, b)
	}
	// Other C0 controls inside a sequence are dropped (a terminal would act on them in place: passing
	// them would reorder the output).
	return dst
}

// escInter handles the bytes after ESC and an intermediate.
func (f *Filter) escInter(dst []byte, b byte) []byte {
	switch {
	case b >= 0x20 && b <= 0x2f:
		if f.n < 4 {
			f.buf[f.n] = b
		}
		f.n++
	case b >= 0x30 && b <= 0x7e:
		f.st = ground
		if f.n <= 3 && escPasses(f.buf[1], b) && (f.n == 2 || charsetIntro(f.buf[1])) {
			dst = append(dst, f.buf[:f.n]...)
			dst = append(dst, b)
		}
	case b >= 0x80:
		f.st = ground
		return f.ground(dst, b)
	default:
		f.interrupt(b)
	}
	return dst
}

// csi holds a control sequence until its final byte, then passes it if it draws.
func (f *Filter) csi(dst []byte, b byte) []byte {
	switch {
	case b >= 0x30 && b <= 0x3f:
		// A parameter byte after an intermediate, or a private marker (< = > ?) after the first parameter
		// byte, is malformed: the terminal ignores the sequence, and so it is dropped.
		if f.buf[f.n-1] >= 0x20 && f.buf[f.n-1] <= 0x2f || b >= 0x3c && f.n > 2 {
			f.st = csiIgnore
			return dst
		}
	case b >= 0x20 && b <= 0x2f:
	case b >= 0x40 && b <= 0x7e:
		f.st = ground
		f.buf[f.n] = b
		if csiPasses(f.buf[2:f.n], b) {
			f.left |= turnsOn(f.buf[2:f.n], b)
			dst = append(dst, f.buf[:f.n+1]...)
		} else if b == 'c' && (f.n == 2 || f.n == 3 && f.buf[2] == '0') {
			f.da++
		}
		return dst
	case b >= 0x80:
		f.st = csiIgnore
		return dst
	default:
		f.interrupt(b)
		return dst
	}
	if f.n == maxCSI-1 {
		f.st = csiIgnore
		return dst
	}
	f.buf[f.n] = b
	f.n++
	return dst
}

// title holds an OSC until its end (Options.Titles).
func (f *Filter) title(dst []byte, b byte) []byte {
	switch {
	case b == bel:
		return f.endTitle(dst, bel, 0)
	case b == esc:
		f.st = titleEsc
		return dst
	case b == can || b == sub:
		f.st = ground
		return dst
	case b < 0x20 || b == del:
		f.bad = true
		return dst
	}
	if f.n == maxTitle {
		f.st, f.osc = strDrop, true
		return dst
	}
	f.buf[f.n] = b
	f.n++
	return dst
}

// endTitle passes the held OSC with its terminator (BEL, or ESC \ as t, t2) if it sets a title.
func (f *Filter) endTitle(dst []byte, t, t2 byte) []byte {
	f.st = ground
	if f.bad || !titlePasses(f.buf[2:f.n]) {
		return dst
	}
	dst = append(dst, f.buf[:f.n]...)
	if t2 != 0 {
		return append(dst, t, t2)
	}
	return append(dst, t)
}
