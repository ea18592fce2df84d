package shim

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/proc"
)

type testReceipt struct {
	ID  string `json:"id"`
	PID int    `json:"pid"`
}

// TestMain serves as the shim's side when re-executed with SHIMTEST set: it answers a Config with the
// receipt completed (or a Failure for the id "fail"), then waits for Done and exits 0, or 3 when fd 3
// closed before a Config.
func TestMain(m *testing.M) {
	if os.Getenv("SHIMTEST") == "" {
		os.Exit(m.Run())
	}
	c := Open()
	var cfg Config[[]string, testReceipt]
	if err := c.ReadConfig(&cfg); err != nil {
		os.Exit(3)
	}
	if cfg.ID == "fail" {
		_ = c.Answer(Result[testReceipt]{Failure: &Failure{Stage: "exec", Errno: 2, Message: strings.Join(cfg.Init, " ")}})
		os.Exit(125)
	}
	rc := cfg.Receipt
	rc.PID = os.Getpid()
	_ = c.Answer(Result[testReceipt]{Receipt: rc})
	c.WaitDone()
	c.Close()
	os.Exit(0)
}

func startShim(t *testing.T) *Parent {
	t.Helper()
	p, err := Start(proc.Command{Path: "/proc/self/exe", Args: []string{os.Args[0]}, Env: []string{"SHIMTEST=1"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExchange(t *testing.T) {
	p := startShim(t)
	var res Result[testReceipt]
	cfg := Config[[]string, testReceipt]{ID: "w-1", Init: []string{"true"}, Receipt: &testReceipt{ID: "w-1"}}
	if err := p.Exchange(cfg, &res); err != nil {
		t.Fatal(err)
	}
	if res.Failure != nil || res.Receipt == nil || res.Receipt.ID != "w-1" || res.Receipt.PID != p.PID() {
		t.Fatalf("answer %+v, want the receipt completed by the shim (pid %d)", res, p.PID())
	}
	p.Done()
	ws, err := p.Proc.Wait()
	if err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("shim after Done: %v, %v; want exit 0 (it waited for the EOF of fd 3)", ws, err)
	}
}

func TestExchangeFailure(t *testing.T) {
	p := startShim(t)
	var res Result[testReceipt]
	if err := p.Exchange(Config[[]string, testReceipt]{ID: "fail", Init: []string{"no", "such"}}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Failure == nil || res.Failure.Stage != "exec" || res.Failure.Errno != 2 || res.Failure.Message != "no such" {
		t.Fatalf("answer %+v, want the shim's Failure", res)
	}
	p.Abort()
}

func TestParentGoneBeforeConfig(t *testing.T) {
	p := startShim(t)
	p.Done() // the launcher went away before placing the shim
	ws, err := p.Proc.Wait()
	if err != nil || ws.ExitStatus() != 3 {
		t.Fatalf("shim: %v, %v; want exit 3 (EOF before a Config: it starts nothing)", ws, err)
	}
	var res Result[testReceipt]
	if err := p.Exchange(Config[[]string, testReceipt]{}, &res); !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.EOF) {
		t.Fatalf("Exchange after Done: %v, want a closed pipe", err)
	}
	p.Abort()
}
