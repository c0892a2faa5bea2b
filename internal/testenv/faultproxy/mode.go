package faultproxy

import "time"

// Mode is how the proxy treats traffic. Compare modes with ==.
type Mode struct {
	kind  kind
	delay time.Duration
}

type kind int

const (
	pass kind = iota
	dropReplies
	blackhole
	delay
	reset
	duplicate
	dropRequests
)

var (
	// Pass forwards both directions unchanged.
	Pass = Mode{kind: pass}
	// DropReplies forwards client-to-server bytes and silently discards
	// server-to-client bytes: commands reach Redis and take effect, but the
	// client never learns the outcome.
	DropReplies = Mode{kind: dropReplies}
	// DropRequests discards client-to-server bytes and forwards the other
	// direction: what the client sends never arrives, while the server can
	// still reach it.
	DropRequests = Mode{kind: dropRequests}
	// Blackhole discards both directions while keeping connections open, so
	// only the client's timeouts can detect it.
	Blackhole = Mode{kind: blackhole}
	// Reset closes every open connection and every new one as soon as it is
	// accepted, with an RST rather than a FIN, so the client fails at once
	// instead of timing out.
	Reset = Mode{kind: reset}
)

// Delay forwards both directions, holding each chunk for d before writing
// it, so a round trip takes at least 2*d. Chunks on one connection stay in
// order, so a steady stream also loses throughput.
func Delay(d time.Duration) Mode { return Mode{kind: delay, delay: d} }

// Duplicate forwards both directions unchanged and, after d, delivers a
// second copy of every command the client sent meanwhile, on a connection
// of the proxy's own to the current target whose replies nobody reads. It
// is what a go-redis retry on a new connection looks like to Redis when the
// first attempt was not lost but only late (it sat in a stalled server's
// buffer, or its reply did): the command runs twice, the second time late.
// Copies are whole commands, as many as one read from the client
// completed, in order; commands that only set up a connection (HELLO,
// AUTH, SELECT, CLIENT) are not copied, as a retry would not resend them
// either. Copies already scheduled are delivered after a switch to another
// mode too: late delivery is the point.
func Duplicate(d time.Duration) Mode { return Mode{kind: duplicate, delay: d} }

func (m Mode) String() string {
	switch m.kind {
	case dropReplies:
		return "DropReplies"
	case dropRequests:
		return "DropRequests"
	case blackhole:
		return "Blackhole"
	case delay:
		return "Delay(" + m.delay.String() + ")"
	case reset:
		return "Reset"
	case duplicate:
		return "Duplicate(" + m.delay.String() + ")"
	default:
		return "Pass"
	}
}
