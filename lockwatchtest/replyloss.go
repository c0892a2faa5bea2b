package lockwatchtest

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// replyLoss drops replies at the socket, where a network loses them: the
// Locker's client dials through it, and a connection that writes the armed
// lock key stops hearing the server until its read deadline. The command
// went out whole, so Redis runs it; the client's own deadline is what ends
// the wait, as with a real lost reply.
type replyLoss struct {
	mu    sync.Mutex
	armed [][]byte // lock keys whose next command loses its reply
}

func (r *replyLoss) arm(lockKey string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = append(r.armed, []byte(lockKey))
}

// take disarms and reports the first armed key that b, written to the
// server, names.
func (r *replyLoss) take(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range r.armed {
		if bytes.Contains(b, k) {
			r.armed = append(r.armed[:i], r.armed[i+1:]...)
			return true
		}
	}
	return false
}

// dial is the client's Dialer.
func (r *replyLoss) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &lossyConn{Conn: c, loss: r}, nil
}

// lossyConn is one client connection; deaf once it sent an armed key.
// go-redis closes a connection whose read failed, so the replies lost stay
// on it.
type lossyConn struct {
	net.Conn
	loss *replyLoss
	deaf atomic.Bool
}

func (c *lossyConn) Write(b []byte) (int, error) {
	if c.loss.take(b) {
		c.deaf.Store(true)
	}
	return c.Conn.Write(b)
}

// Read reads and discards what the server sends once deaf, until the read
// deadline (or the close) ends the read with its error.
func (c *lossyConn) Read(b []byte) (int, error) {
	if !c.deaf.Load() {
		return c.Conn.Read(b)
	}
	sink := make([]byte, 4096)
	for {
		if _, err := c.Conn.Read(sink); err != nil {
			return 0, err
		}
	}
}
