package faultproxy

import (
	"context"
	"net"
	"time"
)

// copyReplyTimeout bounds how long a copy's connection waits for the
// replies it discards: a copy that a stalled server has not answered by
// then is left in the server's buffer, as a retry's socket would be.
const copyReplyTimeout = 5 * time.Second

// setupCommands are not copied: a retry does not resend them, and on the
// copy's own connection they would only change how its replies look.
var setupCommands = map[string]bool{"HELLO": true, "AUTH": true, "SELECT": true, "CLIENT": true}

// deliverLater sends copies of commands after d on a connection of their
// own, reads their replies and throws them away.
func (p *Proxy) deliverLater(commands [][]byte, d time.Duration) {
	var batch []byte
	n := 0
	for _, c := range commands {
		if !setupCommands[commandName(c)] {
			batch = append(batch, c...)
			n++
		}
	}
	if n == 0 {
		return
	}
	p.copied.Add(int64(n))
	p.wg.Add(1) // the calling pipe holds the group open, so this cannot race Close's Wait
	go func() {
		defer p.wg.Done()
		if !p.sleep(d) {
			return
		}
		ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
		var dialer net.Dialer
		conn, err := dialer.DialContext(ctx, "tcp", p.Target())
		cancel()
		if err != nil {
			return // a copy lost on the way: the server is down
		}
		defer conn.Close()
		stop := context.AfterFunc(p.ctx, func() { _ = conn.Close() })
		defer stop()
		_ = conn.SetDeadline(time.Now().Add(copyReplyTimeout))
		if _, err := conn.Write(batch); err != nil {
			return
		}
		p.delivered.Add(int64(discardReplies(conn, n)))
	}()
}

// Copies reports how many commands Duplicate copied so far, and how many
// of those copies the server has answered (their replies discarded).
func (p *Proxy) Copies() (copied, answered int64) { return p.copied.Load(), p.delivered.Load() }

// discardReplies reads up to n replies, so that the connection stays open
// until the server has run every copied command, and returns how many came.
func discardReplies(conn net.Conn, n int) int {
	var replies frames
	buf := make([]byte, 4<<10)
	got := 0
	for got < n {
		m, err := conn.Read(buf)
		got += len(replies.add(buf[:m]))
		if err != nil || replies.broken {
			break
		}
	}
	return min(got, n)
}
