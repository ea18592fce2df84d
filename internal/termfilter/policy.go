package termfilter

import (
	"slices"
	"unicode/utf8"
)

// The policy: which complete sequences pass. Each is a list of what passes; everything not named is
// dropped, so a sequence a terminal adds later is dropped until it is judged. The principle: a sequence
// passes if it acts on the screen (the text, the cursor, colours, the scroll region, modes that change how
// the screen is drawn or how keys and the mouse are encoded) and dropped if it writes outside the screen
// (the clipboard, the title, the palette, the window, the printer, the keyboard's LEDs) or makes the
// terminal type into its own input (a report, a query's answer, the answer-back).

// escPasses reports whether ESC [inter] final passes (inter 0: none).
func escPasses(inter, final byte) bool {
	switch inter {
	case 0:
		switch final {
		case '7', '8', // DECSC, DECRC: save and restore the cursor
			'=', '>', // DECKPAM, DECKPNM: keypad modes
			'D', 'E', 'H', 'M', // IND, NEL, HTS, RI
			'N', 'O', 'n', 'o', '|', '}', '~', // single and locking shifts
			'c': // RIS: a full reset of the terminal's state (it reports nothing)
			return true
		}
		// Dropped: ESC Z (DECID, answered as DA), and the rest.
		return false
	case '#':
		return final == '3' || final == '4' || final == '5' || final == '6' || final == '8' // line sizes, DECALN
	}
	// ESC ( ) * + - . / designate a charset (the line-drawing set of curses). Dropped: ESC SP F and
	// G (7- or 8-bit controls in the terminal's reports), ESC % (leaving UTF-8: the terminal would then
	// read bytes this filter passes as text as 8-bit controls).
	return charsetIntro(inter)
}

// charsetIntro reports whether b is an intermediate that designates a charset.
func charsetIntro(b byte) bool {
	return b >= '(' && b <= '/' && b != ','
}

// csiPasses reports whether the control sequence ESC [ body final passes; body is its parameter and
// intermediate bytes.
func csiPasses(body []byte, final byte) bool {
	var marker, inter byte
	if len(body) > 0 && body[0] >= '<' && body[0] <= '?' {
		marker, body = body[0], body[1:]
	}
	params := body
	for i, b := range body {
		if b >= 0x20 && b <= 0x2f {
			if i != len(body)-1 {
				return false // more than one intermediate: none of the drawing sequences has two
			}
			inter, params = b, body[:i]
		}
	}
	switch {
	case marker == 0 && inter == 0:
		switch final {
		case '@', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'P', 'S', 'X', 'Z',
			'`', 'a', 'b', 'd', 'e', 'f', 'g', 'm', 'r', 's', 'u':
			// Cursor movement, insert and delete, erase, scroll, tabs, SGR, the scroll region and
			// margins, save and restore the cursor.
			return true
		case 'T':
			// SD; with five parameters it starts xterm's highlight mouse tracking, which reports.
			return !slices.Contains(params, ';')
		case 'h', 'l':
			// SM, RM: only IRM (4, insert) and LNM (20, newline). KAM (2) locks the caller's keyboard,
			// SRM (12) turns its local echo on.
			return modesAre(params, 4, 20)
		}
		// Dropped: DA (c), DSR and CPR (n), window operations and reports, the title stack (t), media
		// copy (i), LEDs (q), DECREQTPARM (x).
		return false
	case marker == '?' && inter == 0:
		// DEC private modes (the cursor, the alternate screen, bracketed paste, mouse and focus
		// reporting, ...), selective erase, and saving and restoring them. Dropped: DECDSR (n), media
		// copy (i), the keyboard protocol's query (u), XTQMODKEYS (m).
		return final == 'h' || final == 'l' || final == 'J' || final == 'K' || final == 'r' || final == 's'
	case marker == '>' && inter == 0:
		// XTMODKEYS (m, n: how modified keys are encoded), the keyboard protocol's push (u). Dropped: DA2
		// (c), XTVERSION (q), title modes (t, T).
		return final == 'm' || final == 'n' || final == 'u'
	case (marker == '<' || marker == '=') && inter == 0:
		// The keyboard protocol's pop and set. Dropped: DA3 (= c).
		return final == 'u'
	case marker == 0 && inter == ' ':
		return final == 'q' // DECSCUSR: the cursor's shape
	case marker == 0 && inter == '!':
		return final == 'p' // DECSTR: a soft reset
	}
	// Dropped: DECRQM ($ p), DECRQPSR, DECRQTSR, DECRQCRA (a checksum of the screen: a read of it), the
	// page size (DECSCPP, DECSNLS: the window), DECSCL (the conformance level), and the rest.
	return false
}

// inputModes is a set of the kinds of input mode a sequence turns on: what the terminal sends for a key,
// the mouse, the focus, a paste or a resize.
type inputModes uint8

const (
	reporting inputModes = 1 << iota // DEC private modes: mouse, focus, resize reports, bracketed paste
	keyFlags                         // the keyboard protocol's flags (CSI > u, CSI = u)
	modKeys                          // XTMODKEYS (CSI > m)
)

// turnsOn returns the input modes a passed sequence ESC [ body final may turn on.
func turnsOn(body []byte, final byte) inputModes {
	if len(body) == 0 {
		return 0
	}
	switch {
	case body[0] == '?' && (final == 'h' || final == 'r'): // set, or restore to what was saved
		if len(body) == 1 || anyMode(body[1:], 9, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1015, 1016, 2004, 2048) {
			return reporting
		}
	case (body[0] == '>' || body[0] == '=') && final == 'u':
		return keyFlags
	case body[0] == '>' && final == 'm':
		return modKeys
	}
	return 0
}

// anyMode reports whether the parameter list params names one of modes.
func anyMode(params []byte, modes ...int) bool {
	for len(params) > 0 {
		i := 0
		for i < len(params) && params[i] != ';' {
			i++
		}
		if i > 0 && modesAre(params[:i], modes...) {
			return true
		}
		params = params[min(i+1, len(params)):]
	}
	return false
}

// modesAre reports whether params is a list of one or more of the modes allowed.
func modesAre(params []byte, allowed ...int) bool {
	n, digits := 0, 0
	ok := func() bool {
		if digits == 0 {
			return false
		}
		return slices.Contains(allowed, n)
	}
	for _, b := range params {
		switch {
		case b >= '0' && b <= '9':
			if n < 1<<16 {
				n = n*10 + int(b-'0')
			}
			digits++
		case b == ';':
			if !ok() {
				return false
			}
			n, digits = 0, 0
		default:
			return false
		}
	}
	return ok()
}

// titlePasses reports whether an OSC's payload (between ESC ] and its end) sets the icon name, the window
// title or both (0, 1, 2) to text: valid UTF-8 with no control character (C0, DEL, C1), so that the
// terminal reads the sequence as this filter did. Every other OSC is dropped: the clipboard (52), the
// palette and its queries (4, 10-19, 104, ...), hyperlinks (8: a link shows text and opens a target the
// worker chose, unseen), notifications, the current directory (7), and the rest.
func titlePasses(p []byte) bool {
	if len(p) < 2 || p[1] != ';' || p[0] < '0' || p[0] > '2' {
		return false
	}
	p = p[2:]
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n <= 1 || r < 0x20 || r >= 0x7f && r <= 0x9f {
			return false
		}
		p = p[n:]
	}
	return true
}
