// Package records keeps what hlaunch knows of its workers on disk: the state directory's records (one
// receipt per detached worker, its exit record and its log's position record, the token index, the
// quarantine of damaged records) and the ledger (one execution record per worker, kept past the worker,
// and the in-memory index retention prunes it by). A Store is one launcher's pair of directories. It reads
// and writes files only: verifying a record against the running system, reconciling a lost shim and
// collecting ended workers are the launcher's, which stands on this package; the shim writes through it.
package records
