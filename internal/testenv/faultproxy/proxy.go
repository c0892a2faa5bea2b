package faultproxy

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Bounds a dial to a target that is paused or gone; Close cancels it sooner.
const dialTimeout = 5 * time.Second

// Proxy forwards TCP connections from Addr to a target, subject to a Mode.
type Proxy struct {
	ln     net.Listener
	ctx    context.Context // cancelled by Close: aborts dials and delays
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started

	mu       sync.Mutex
	target   string // guarded by mu: SetTarget re-points the proxy
	mode     Mode
	closed   bool
	links    map[*link]struct{}
	isolated map[string]bool // client IPs whose connections are blackholed (Isolate)

	closeOnce sync.Once
	closeErr  error

	copied, delivered atomic.Int64 // Duplicate's commands: copied, and answered on their own connection
}

// link is one proxied connection: the accepted client side and the dialed
// server side, and where the client's commands begin and end.
type link struct {
	client, server net.Conn
	from           string // the client's IP
	requests       frames // read by the client-to-server pipe only
}

// Start listens on 127.0.0.1:0 in Pass mode and forwards every accepted
// connection to target. The proxy is closed on t.Cleanup.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Launch(target)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("faultproxy: close: %v", err)
		}
	})
	return p
}

// Launch starts a proxy like Start, for code that has no testing.TB (a
// long-running harness such as cmd/lockwatch-chaos). The caller must Close it.
func Launch(target string) (*Proxy, error) { return LaunchOn("127.0.0.1:0", target) }

// LaunchOn is Launch listening on listen, an address of a network
// namespace the caller made (the veth end a holder in another namespace
// reaches this one through), or of loopback.
func LaunchOn(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, links: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients should dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode for open and future connections. Switching to Reset
// has closed every open connection by the time Set returns.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	p.mode = m
	var victims []*link
	if m.kind == reset {
		for l := range p.links {
			victims = append(victims, l)
		}
	}
	p.mu.Unlock()
	for _, l := range victims {
		l.reset()
	}
}

// Close stops listening, closes every connection and waits for all of the
// proxy's goroutines to end. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		links := p.links
		p.links = nil
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.ln.Close()
		for l := range links {
			l.close()
		}
		p.wg.Wait()
	})
	return p.closeErr
}

// SetTarget re-points the proxy: connections accepted from now on are
// forwarded to target. Open connections keep their server, as a client's
// pooled connections to a failed-over primary would; Set(Reset) closes them
// when the test wants clients to reconnect at once.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// Target is the address new connections are forwarded to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// Isolate blackholes, in both directions, every connection open or to come
// from the source address ip, whatever the mode; other clients are served
// as the mode says. On loopback, where every client is 127.0.0.1, a
// server that sends from an address of its own (redis-server
// --bind-source-addr 127.0.0.N) can so be cut off from its peers' proxies
// while the test's own clients still reach them: with Blackhole on its own
// proxy, that is a server partitioned from everyone.
func (p *Proxy) Isolate(ip string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isolated == nil {
		p.isolated = map[string]bool{}
	}
	p.isolated[ip] = true
}

// Rejoin ends an Isolate of ip. The connections from ip that were open
// during the cut are reset: bytes were dropped from their streams, and a
// stream with a gap is one no TCP connection delivers (a replica applying
// it would diverge). New ones pass.
func (p *Proxy) Rejoin(ip string) {
	p.mu.Lock()
	delete(p.isolated, ip)
	var cut []*link
	for l := range p.links {
		if l.from == ip {
			cut = append(cut, l)
		}
	}
	p.mu.Unlock()
	for _, l := range cut {
		l.reset()
	}
}

// modeFor is the mode that applies to l's next chunk.
func (p *Proxy) modeFor(l *link) Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isolated[l.from] {
		return Blackhole
	}
	return p.mode
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // only Close makes a loopback listener fail
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	server, err := d.DialContext(ctx, "tcp", p.Target())
	cancel()
	if err != nil {
		// The client sees what it would see without the proxy: a refused
		// connection becomes a reset one.
		resetConn(client)
		return
	}
	l := &link{client: client, server: server}
	if a, ok := client.RemoteAddr().(*net.TCPAddr); ok {
		l.from = a.IP.String()
	}
	// The mode is checked under the lock that Set holds, so a Set(Reset)
	// racing with the dial cannot miss this connection.
	p.mu.Lock()
	ok := !p.closed && p.mode.kind != reset
	if ok {
		p.links[l] = struct{}{}
	}
	p.mu.Unlock()
	if !ok {
		l.reset()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.pipe(l, server, client, true)
	}()
	p.pipe(l, client, server, false)
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, consulting the mode for every
// chunk so that Set takes effect on open connections. When either side ends,
// it closes both, which also ends the pipe running the other way.
func (p *Proxy) pipe(l *link, src, dst net.Conn, toClient bool) {
	defer l.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			var commands [][]byte
			if !toClient {
				// Framed whatever the mode, so that a switch to Duplicate
				// mid-stream still knows where each command starts.
				commands = l.requests.add(buf[:n])
			}
			switch m := p.modeFor(l); {
			case m.kind == reset:
				l.reset()
				return
			case m.kind == blackhole, m.kind == dropReplies && toClient, m.kind == dropRequests && !toClient:
				// Read and discarded, so the sender never blocks on a full
				// window and cannot tell anything is wrong.
			default:
				if m.kind == delay && !p.sleep(m.delay) {
					return
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
				if m.kind == duplicate && !toClient {
					p.deliverLater(commands, m.delay)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// sleep waits d unless the proxy closes first, so a long Delay cannot hold
// Close up.
func (p *Proxy) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

func (l *link) close() {
	_ = l.client.Close()
	_ = l.server.Close()
}

func (l *link) reset() {
	resetConn(l.client)
	resetConn(l.server)
}

// resetConn closes c with an RST: with SO_LINGER 0 the kernel drops unsent
// data and aborts the connection, so the peer's next read or write fails
// with "connection reset" instead of seeing an orderly EOF.
func resetConn(c net.Conn) {
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}
