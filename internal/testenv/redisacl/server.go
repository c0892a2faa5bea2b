package redisacl

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// Server is a redis-server of a test's own, whose users are the test's, and
// a client of its default user, which may do anything: it sets the users
// and reads ACL LOG.
type Server struct {
	*redistest.Server
	Admin *redis.Client
}

// Start starts a Server (redistest.Start, with args; it skips or fails
// when redis-server is missing).
func Start(t *testing.T, args ...string) *Server {
	t.Helper()
	return On(t, redistest.Start(t, args...))
}

// On returns srv as a Server: a node of a Cluster, say.
func On(t *testing.T, srv *redistest.Server) *Server {
	return &Server{Server: srv, Admin: srv.Client(t)}
}

// User creates or replaces user with rules, with a random password in
// place of the placeholder, and returns a client that logs in as it
// (ContextTimeoutEnabled, as lockwatch asks), with opts applied after.
func (s *Server) User(t *testing.T, user string, rules []string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	password := s.SetUser(t, user, rules)
	return s.Client(t, append([]func(*redis.Options){func(o *redis.Options) {
		o.Username, o.Password = user, password
		o.ContextTimeoutEnabled = true
	}}, opts...)...)
}

// SetUser creates or replaces user with rules, with a random password in
// place of the placeholder, and returns the password: for a client the test
// does not build itself, a lockwatch process say.
func (s *Server) SetUser(t *testing.T, user string, rules []string) (password string) {
	t.Helper()
	password = rand.Text()
	s.setUser(t, user, password, rules)
	return password
}

// ClusterUser creates or replaces user with rules on every node of cl
// (ACLs are each server's own) and returns a client that logs in as it.
// Unlike cl.Client it sends nothing before the test does: its discovery
// is under test.
func ClusterUser(t *testing.T, cl *redistest.Cluster, user string, rules []string) *redis.ClusterClient {
	t.Helper()
	password := rand.Text()
	for _, n := range cl.Nodes() {
		On(t, n).setUser(t, user, password, rules)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:    cl.Addrs(),
		Username: user, Password: password,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// setUser sets user's rules with password in place of the placeholder.
func (s *Server) setUser(t *testing.T, user, password string, rules []string) {
	t.Helper()
	r := make([]string, len(rules))
	for i, rule := range rules {
		if rule == ">"+Password {
			rule = ">" + password
		}
		r[i] = rule
	}
	require.NoError(t, s.Admin.ACLSetUser(ctx(t), user, r...).Err())
}

// Denial is one entry of ACL LOG: what the server refused a user.
type Denial struct {
	Reason  string // command, key, channel or auth
	Context string // toplevel, lua, multi
	Object  string // the command, key or channel refused
}

// Refusals returns what the server refused user (ACL LOG, newest first),
// less what go-redis's handshake is refused and ignores (Tolerated).
func (s *Server) Refusals(t *testing.T, user string) []Denial {
	t.Helper()
	entries, err := s.Admin.ACLLog(ctx(t), 128).Result()
	require.NoError(t, err)
	var out []Denial
	for _, e := range entries {
		d := Denial{Reason: e.Reason, Context: e.Context, Object: e.Object}
		switch {
		case e.Username != user:
		case Tolerated(d):
			t.Logf("redisacl: %s was refused %+v, which go-redis ignores", user, d)
		default:
			out = append(out, d)
		}
	}
	return out
}

// Tolerated tells a denial that go-redis's connection handshake meets under
// these rules and ignores: CLIENT SETINFO (Redis 7.2 and later; 7.0 does
// not know it, and refuses +client|setinfo in a rule) and CLIENT
// MAINT_NOTIFICATIONS (servers that know it), both sent by go-redis v9
// after HELLO, whose error replies it skips. Any other refusal a test
// meets is a rule missing.
func Tolerated(d Denial) bool {
	return d.Reason == "command" && d.Context == "toplevel" &&
		(d.Object == "client|setinfo" || d.Object == "client|maint_notifications")
}

// Refused tells whether err is the server refusing a command by ACL: NOPERM
// for a command, key or channel the call names itself, and, for a command
// a script calls, Redis 7.0's "The user executing the script can't ..."
// or Valkey's (and Redis 7.2's) "ACL failure in script: ..." (ERR
// replies: the script stops there).
func Refused(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NOPERM") ||
		strings.Contains(err.Error(), "The user executing the script can't") ||
		strings.Contains(err.Error(), "ACL failure in script: "))
}

// RequireRefused fails the test unless err is an ACL refusal.
func RequireRefused(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.True(t, Refused(err), "%s: want an ACL refusal (NOPERM), got %v", what, err)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
