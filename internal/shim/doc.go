// Package shim is a detached worker's shim (`hlaunch __shim`) and its protocol with the launcher: the
// messages they exchange (Config, Result) and both ends of the exchange (Start/Parent for the launcher,
// Open/Child for the shim), the launcher's guard of that exchange (guard.go), and the shim's life itself
// (Main in main.go: starting the worker, its records and the ledger through internal/records, the
// supervision of its tree and its deadline in life.go, the copy of its output in logcopy.go). Like
// containerd's pkg/shim, the process's lifecycle is a package of its own: it stands on the worker
// vocabulary, the records and workerlog, and nothing of the launcher.
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
