package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTokenizerMatchesPython runs the reference tokenizer (testdata/hermes_dotenv_ref.py, hermes'
// load_env_file transcribed) under a real Python over thousands of random adversarial inputs (BOMs,
// bytes that are not UTF-8 (refused at Python's offset), Unicode whitespace and line breaks, quotes, backslashes, '#', "export ") and requires
// the Go tokenizer to give the same entries. Python's str.strip, str.splitlines and re's \s are the
// ground truth the hand-written Go rules must reproduce.
func TestTokenizerMatchesPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required in CI for the differential tokenizer test: %v", err)
		}
		t.Skipf("no python3 to run the reference tokenizer: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, seed := range []string{"1"} {
		out, err := exec.CommandContext(ctx, py, "testdata/hermes_dotenv_ref.py", seed, "3000").Output()
		if err != nil {
			t.Fatalf("reference tokenizer: %v", err)
		}
		var cases []struct {
			In  []byte
			Out [][]any
			Bad *int
		}
		if err := json.Unmarshal(out, &cases); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, c := range cases {
			got, err := parseDotenv(c.In)
			if c.Bad != nil || err != nil {
				// Not UTF-8: refused, at the offset Python's decoder reports.
				want := ""
				if c.Bad != nil {
					want = fmt.Sprintf("at byte %d:", *c.Bad)
				}
				if c.Bad == nil || err == nil || !errors.Is(err, ErrNotUTF8) || !strings.Contains(err.Error(), want) {
					if bad++; bad <= 5 {
						t.Errorf("input %q\n go: %v\n py: bad at %v", c.In, err, c.Bad)
					}
				}
				continue
			}
			ok := len(got) == len(c.Out)
			for i := 0; ok && i < len(got); i++ {
				k, _ := c.Out[i][0].(string)
				v, _ := c.Out[i][1].(string)
				n, _ := c.Out[i][2].(float64)
				ok = got[i].Key == k && got[i].Value == v && float64(got[i].Line) == n
			}
			if !ok {
				if bad++; bad <= 5 {
					t.Errorf("input %q\n go: %+v\n py: %q", c.In, got, c.Out)
				}
			}
		}
		if bad > 0 {
			t.Fatalf("seed %s: %d of %d inputs differ from the Python reference", seed, bad, len(cases))
		}
	}
}
