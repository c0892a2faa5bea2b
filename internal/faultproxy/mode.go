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
)

var (
	// Pass forwards both directions unchanged.
	Pass = Mode{kind: pass}
	// DropReplies forwards client-to-server bytes and silently discards
	// server-to-client bytes: commands reach Redis and take effect, but the
	// client never learns the outcome.
	DropReplies = Mode{kind: dropReplies}
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

func (m Mode) String() string {
	switch m.kind {
	case dropReplies:
		return "DropReplies"
	case blackhole:
		return "Blackhole"
	case delay:
		return "Delay(" + m.delay.String() + ")"
	case reset:
		return "Reset"
	default:
		return "Pass"
	}
}
