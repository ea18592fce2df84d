#!/bin/bash
# hostkinds.sh - which tests the guest lane runs for which host kind, by name (go test -run/-skip), and
# why. A test that cannot apply to a host kind is left out here, never skipped at run time (in CI a skip
# fails). docs/testing.md's table is the reader's view of these lists.

# guest-root: everything, but for what only a host without systemd or with v1 hierarchies has:
#   TestLegacyView, TestV1LimitsLand, TestKernelV1Hierarchy, TestDeleteNestedPopulatedV1  a v1 freezer/memory/pids hierarchy
#   TestPureV2          a private pure-v2 tree built on a hybrid host (here the host suite is pure v2)
#   TestConnectSystemNoBus  a host without a system manager (here /run/systemd/private answers)
#   TestHlaunchDependencies  the Go toolchain (go list -deps): the guest has test binaries, not Go
# The build machine's make test runs each of them.
ROOT_SKIP_UNIT='^(TestLegacyView|TestV1LimitsLand|TestKernelV1Hierarchy|TestDeleteNestedPopulatedV1|TestPureV2|TestConnectSystemNoBus|TestHlaunchDependencies)$'
# Integration: TestCgroupPureV2 builds a private pure-v2 tree on a hybrid host and places workers under the
# default parent there; here the host itself is pure v2 (the whole suite is the pure-v2 suite) and its tree
# is systemd's, where the default parent is refused outside a delegated unit (TestGuestCgroupModeUnderSystemd).
# TestSoak (600 spawns with its rounds against a fresh sidecar) and TestSidecarThreadsPerLiveWorker (64 live
# workers) are counts over many spawns: under TCG they took 6+ and 4 minutes and pushed the package past
# its 20-minute timeout; they hold nothing the guest's kernel or manager changes, and the build machine runs both.
# TestSidecarFlood (thousands of connections from a socket-group user against the sidecar's own limits) is a load
# test of the sidecar's accept loop and counters, nothing the guest's kernel or manager changes; under TCG its
# floods would take minutes of the package's timeout. The build machine runs it.
# TestDefaultLimitsHoldForkBomb and TestSidecarDefaultLimitsHoldForkBomb fork 2048 bash subshells: minutes
# under TCG. The defaults' placement on pure v2 (each limit read back from the worker's cgroup) is
# TestDefaultLimitsInReceipt, which runs here. The build machine runs both bombs.
# TestRedteam3ShimPIDTakenByWorker needs a pid_max per pid namespace (Linux 6.14; the guest's bookworm kernel
# is 6.1, where a namespace's PIDs wrap only at the host's pid_max); ShimAlive does not depend on the kernel.
ROOT_SKIP_INTEGRATION='^TestGuestUser|^TestGuestNoManager|^TestGuestReboot|^TestCgroupPureV2$|^TestSoak$|^TestSidecarThreadsPerLiveWorker$|^TestSidecarFlood$|^TestDefaultLimitsHoldForkBomb$|^TestSidecarDefaultLimitsHoldForkBomb$|^TestRedteam3ShimPIDTakenByWorker$'

# guest-alice (linger user, run from her manager): the tests written for a user with a manager.
declare -A ALICE_RUN_UNIT=()
ALICE_RUN_INTEGRATION='^TestGuestUser|^TestGatewayAcceptance$'

# guest-bob (a user without a manager).
BOB_RUN_INTEGRATION='^TestGuestNoManager'
