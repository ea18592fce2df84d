package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hlaunch/hlaunch/internal/sidecar/idemkeys"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// Headers of an idempotent spawn.
const (
	headerIdemKey    = idemkeys.Header
	headerIdemReplay = "Idempotent-Replay"
)

// ErrIdemMismatch: an Idempotency-Key came again with another body (422 idempotency_mismatch).
var ErrIdemMismatch = errors.New("idempotency key reused with another body")

// spawnIdempotent is POST /v1/workers with an Idempotency-Key: the first spawn with a key is remembered
// (its id before the launch, its receipt after it), and a repeat with the same key and the same body is
// answered that receipt (201, Idempotent-Replay: true) without a second launch; the same key with another
// body is 422 idempotency_mismatch. A key is the peer uid's own: another uid's same key is another spawn. A repeat that arrives while the first is in flight waits for its end.
// A launch that failed is not remembered: its repeat launches again.
func (s *Server) spawnIdempotent(ctx context.Context, w http.ResponseWriter, uid uint32, key string, body []byte, spec worker.Spec, stdio worker.Stdio) {
	if s.idem == nil {
		writeError(w, fmt.Errorf("%w: header %s: this sidecar keeps no idempotency keys", ErrNotImplemented, headerIdemKey))
		return
	}
	if err := idemkeys.CheckKey(key); err != nil {
		writeError(w, fmt.Errorf("%w: %w", worker.ErrInvalid, err))
		return
	}
	unlock := s.idem.Lock(uid, key)
	defer unlock()
	hash := idemkeys.BodyHash(body)
	ent, err := s.idem.Get(uid, key)
	if err != nil {
		writeError(w, err)
		return
	}
	if ent != nil {
		if ent.Body != hash {
			writeError(w, fmt.Errorf("%w: header %s %q was first used at %s with another body", ErrIdemMismatch,
				headerIdemKey, key, ent.Created.UTC().Format(time.RFC3339)))
			return
		}
		if rc, ok, err := s.idemReceipt(ctx, ent); err != nil {
			writeError(w, err)
			return
		} else if ok {
			writeReceipt(w, rc, true)
			return
		}
	}
	ent = &idemkeys.Entry{UID: uid, Key: key, Body: hash, Created: s.now()}
	rc, err := s.spawn(ctx, uid, spec, stdio, func(id string) error {
		ent.ID = id
		return s.idem.Put(ent) // on disk before the worker can exist
	})
	if err != nil {
		if ent.ID != "" {
			s.idem.Forget(uid, key)
		}
		writeError(w, err)
		return
	}
	if raw, err := json.Marshal(rc); err == nil {
		ent.Receipt = raw
		// Without it a repeat still finds the worker by the id written before the launch.
		_ = s.idem.Put(ent)
	}
	writeReceipt(w, rc, false)
}

// idemReceipt is the receipt of ent's launch: the one it answered, or, for a launch whose answer was not
// kept (the sidecar ended during it), the receipt of the record under its id. ok is false when no worker
// was recorded under that id: that launch never started one.
func (s *Server) idemReceipt(ctx context.Context, ent *idemkeys.Entry) (*worker.Receipt, bool, error) {
	if len(ent.Receipt) > 0 {
		var rc worker.Receipt
		if err := json.Unmarshal(ent.Receipt, &rc); err != nil {
			return nil, false, fmt.Errorf("idempotency key %q: stored receipt: %w", ent.Key, err)
		}
		return &rc, true, nil
	}
	if ent.ID == "" {
		return nil, false, nil
	}
	rec, err := s.b.Get(ctx, ent.ID)
	if errors.Is(err, worker.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rc := rec.Receipt
	if raw, err := json.Marshal(&rc); err == nil {
		ent.Receipt = raw
		_ = s.idem.Put(ent)
	}
	return &rc, true, nil
}
