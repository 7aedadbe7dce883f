package client

// Status is the state of a consumer's connection, reported to Options.OnStatus on every
// change (docs/design.md, "Live queries": connecting, live, reconnecting, closed).
type Status string

// The statuses, in the order a consumer goes through them.
const (
	// Connecting: the first connection is being opened.
	Connecting Status = "connecting"
	// Live: a connection is open and the server sent its first event (the schema), so
	// the cursor was accepted; replayed and live batches follow.
	Live Status = "live"
	// Reconnecting: the connection ended (abruptly, by a reconnect request, a retryable
	// refusal or, in LiveQuery, a refresh) and a new one is on its way.
	Reconnecting Status = "reconnecting"
	// Closed: Stream or LiveQuery is returning.
	Closed Status = "closed"
)
