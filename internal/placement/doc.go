// Package placement is where a worker goes: the placement modes behind one interface (Placement: none and
// degraded, a raw cgroup hlaunch makes, a transient systemd scope), the one decision of which mode a spec
// gets (Decide, which doctor's dry run shares through its own Placer), and the systemd managers'
// connections a long-lived launcher keeps (Buses). A Host is what a launcher knows of the machine for this:
// its cgroup filesystem, its kept connections and the default limits. The launcher prepares a placement
// before its child starts and places the child before it may run; the shim never places anything.
package placement
