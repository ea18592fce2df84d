// Package events is the sidecar's event stream (GET /v1/events): the Event a stream carries, its types, and
// the Broker that numbers events, keeps a ring of the last ones for a reconnecting client's replay and fans
// them out to subscribers, cutting off one that falls behind rather than slowing the sidecar down.
package events
