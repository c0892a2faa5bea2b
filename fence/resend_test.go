package fence_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestRedisWriteResent: a Write whose script ran but whose reply was lost is
// re-sent by go-redis on a new connection. The copy finds the mark equal to
// its token; it is the same write, already applied, so Write succeeds and
// the check counts once, as accepted: a false rejection would page. Another
// write with the same token is still stale.
func TestRedisWriteResent(t *testing.T) {
	redistest.Require(t)
	ctx := testCtx(t)
	h := newHarness(t)
	srv := redistest.Start(t)
	proxy := startReplyLoser(t, srv.Addr())
	client := srv.Client(t, func(o *redis.Options) {
		o.Addr = proxy.addr()
		o.MaxRetries = 1
	})
	// The script must be cached before the reply is lost: a lost NOSCRIPT
	// reply would be a re-send of a script that never ran.
	require.NoError(t, fence.NewRedisStore(client, "warm-up", fence.RedisConfig{}).Write(ctx, "k", tk("k", 1), nil))

	s := fence.NewRedisStore(client, "ledger", fence.RedisConfig{Telemetry: h.Tel})
	proxy.loseNextScriptReply()
	require.NoError(t, s.Write(ctx, "acct-1", tk("acct-1", 10), []byte("a")), "the re-sent copy of an applied write")
	require.Equal(t, int32(1), proxy.lost.Load(), "the first copy ran and its reply was lost")
	v, mark, err := s.Read(ctx, "acct-1")
	require.NoError(t, err)
	assert.Equal(t, "a", string(v))
	assert.Equal(t, int64(10), mark)
	assert.Equal(t, counts{accepted: 1}, h.counts(t, "ledger"), "one Write, one check")
	assert.Len(t, h.checkSpans(), 1, "one Write, one fence.check span")

	stale(t, s.Write(ctx, "acct-1", tk("acct-1", 10), []byte("b")), 10, 10)
	v, _, err = s.Read(ctx, "acct-1")
	require.NoError(t, err)
	assert.Equal(t, "a", string(v), "a reused token never writes twice")
	assert.Equal(t, counts{accepted: 1, rejected: 1, rejections: 1}, h.counts(t, "ledger"))
}

// replyLoser is a loopback TCP proxy to a redis-server that, once armed,
// lets the next script command (EVALSHA or EVAL) reach Redis, swallows the
// reply and closes that client connection: a reply lost after the script
// ran, which go-redis answers by re-sending the command on a new connection.
// It sees chunks, not commands, which is enough for a client that waits for
// each reply before it sends the next command.
type replyLoser struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	lost   atomic.Int32 // replies swallowed
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func startReplyLoser(t *testing.T, target string) *replyLoser {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &replyLoser{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close) // registered before the client, so it runs after the client closed
	return p
}

func (p *replyLoser) addr() string { return p.ln.Addr().String() }

func (p *replyLoser) loseNextScriptReply() { p.armed.Store(true) }

func (p *replyLoser) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *replyLoser) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *replyLoser) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		var swallow atomic.Bool
		p.wg.Go(func() { p.toServer(client, server, &swallow) })
		p.wg.Go(func() { p.toClient(server, client, &swallow) })
	}
}

func isScript(chunk []byte) bool {
	c := bytes.ToLower(chunk)
	return bytes.Contains(c, []byte("\r\nevalsha\r\n")) || bytes.Contains(c, []byte("\r\neval\r\n"))
}

func (p *replyLoser) toServer(client, server net.Conn, swallow *atomic.Bool) {
	defer server.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if isScript(buf[:n]) && p.armed.CompareAndSwap(true, false) {
				swallow.Store(true) // before Redis can answer
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *replyLoser) toClient(server, client net.Conn, swallow *atomic.Bool) {
	defer client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if swallow.Load() {
				p.lost.Add(1)
				return // the script has run; the client sees its connection close
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
