// Package shim is the protocol between the launcher and a detached worker's shim (`hlaunch __shim`): the
// messages they exchange (Config, Result) and both ends of the exchange (Start/Parent for the launcher,
// Open/Child for the shim). The shim's life itself (starting the worker, its records, the ledger, the
// supervision of its tree) is the launcher's: internal/launcher/shim.go and internal/launcher/shimlife.go.
//
// The transport is internal/msgpipe's (the same two pipes and framing as the init stub's handshake,
// internal/handshake); the conversation differs: the shim answers instead of exec'ing, and stays.
//
//	launcher                                  shim (hlaunch __shim)
//	  start shim, blocked reading fd 3  ---->   (meanwhile: cgroup layout, boot and machine ids)
//	  place it (clone3 into v2, v1 joins,
//	  StartTransientUnit naming its PID)
//	  write Config (one JSON frame)     ---->   read Config: this IS the go-ahead
//	                                            start the worker as its child (through the init stub
//	                                            when sandboxed), capture its identity, write its record
//	  read fd 4: Result                 <----   Result: the receipt, or a Failure (the shim exits 125)
//	  write the receipt (stdout, the
//	  sidecar's record), then close fd 3 ---->  EOF on fd 3: a held worker (the caller's stdio) may run
//	                                            supervise until the worker's tree has ended
//
// EOF on fd 3 before a Config means the launcher went away before placing the shim: it starts nothing.
// EOF on fd 4 without a Result means the shim died before answering: the launcher kills and reaps it.
package shim
