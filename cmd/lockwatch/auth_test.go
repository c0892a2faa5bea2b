package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// TestPasswordsComeFromTheEnvironment: the password is read from
// LOCKWATCH_REDIS_PASSWORD or REDISCLI_AUTH (or a URL in REDIS_URL), an ACL
// user from --user; a password on the command line is refused, and no
// password is ever printed, in -h or in an error.
func TestPasswordsComeFromTheEnvironment(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := testContext(t)
	require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "operator", "on", ">op-secret", "~*", "&*", "+@all").Err())
	// A fence record, so that inspect of the key exits 0 (not 66).
	require.NoError(t, c.Set(ctx, leasekeys.Of(defaultNamespace, "guarded").Fence, "1", 0).Err())
	require.NoError(t, c.ConfigSet(ctx, "requirepass", "s3cret").Err())
	addr := srv.Addr()

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
	}{
		{"no password", nil, []string{"--redis", addr}, exitUnavailable},
		{"wrong password", []string{envPassword + "=nope"}, []string{"--redis", addr}, exitUnavailable},
		{envPassword, []string{envPassword + "=s3cret"}, []string{"--redis", addr}, exitOK},
		{envRedisCLIAuth, []string{envRedisCLIAuth + "=s3cret"}, []string{"--redis", addr}, exitOK},
		{"ours before redis-cli's", []string{envPassword + "=s3cret", envRedisCLIAuth + "=nope"}, []string{"--redis", addr}, exitOK},
		{"ACL user", []string{envPassword + "=op-secret"}, []string{"--redis", addr, "--user", "operator"}, exitOK},
		{"URL in " + envRedisURL, []string{envRedisURL + "=redis://:s3cret@" + addr + "/0"}, nil, exitOK},
		{"password in --redis", nil, []string{"--redis", "redis://:s3cret@" + addr + "/0"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startEnv(t, tc.env, append([]string{"inspect", "--key", "guarded"}, tc.args...)...)
			code := p.wait(t)
			assert.Equal(t, tc.code, code, p.stderr.String())
			for _, secret := range []string{"s3cret", "op-secret"} {
				assert.NotContains(t, p.stdout.String()+p.stderr.String(), secret)
			}
			if code != exitOK {
				assertOneLine(t, p.stderr.String())
			}
		})
	}

	// -h shows the default, which must not be $REDIS_URL's password.
	p := startEnv(t, []string{envRedisURL + "=redis://:s3cret@" + addr + "/0"}, "inspect", "-h")
	assert.Equal(t, exitOK, p.wait(t))
	assert.NotContains(t, p.stdout.String()+p.stderr.String(), "s3cret")
	assert.Contains(t, p.stdout.String()+p.stderr.String(), "-redis host:port")
}
