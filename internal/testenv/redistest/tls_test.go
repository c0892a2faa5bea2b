package redistest_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

func TestStartTLSServesVerifiedTLS(t *testing.T) {
	t.Parallel()
	s := redistest.StartTLS(t, "--databases", "3")
	ctx := testContext(t)
	require.NotEqual(t, s.Addr(), s.TLSAddr())

	cfg := s.TLSConfig()
	assert.False(t, cfg.InsecureSkipVerify)
	c := s.TLSClient(t, func(o *redis.Options) { o.DB = 2 })
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	dbs, err := c.ConfigGet(ctx, "databases").Result()
	require.NoError(t, err)
	assert.Equal(t, "3", dbs["databases"], "extra arguments apply")
	reply, err := s.Do(ctx, "PING")
	require.NoError(t, err, "the plaintext port stays open for the helpers")
	assert.Equal(t, "PONG", reply)

	// The certificate is really verified: a client that does not trust the
	// test's authority is refused.
	conn, err := tls.Dial("tcp", s.TLSAddr(), &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12})
	if err == nil {
		_ = conn.Close()
	}
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown)
}
