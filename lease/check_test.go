package lease

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// Check refuses a server that could evict a held lock, and passes the
// deployments the tests run on (a single node, every master of a Cluster).
func TestCheck(t *testing.T) {
	ctx := testCtx(t)
	for _, b := range backends(t) {
		require.NoError(t, newLocker(t, b.client(t), Config{}).Check(ctx), b.name)
	}
	evicting := redistest.Start(t, "--maxmemory-policy", "volatile-lru")
	err := newLocker(t, evicting.Client(t), Config{}).Check(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "volatile-lru")
}

// Check tells Redis from Valkey, each by the version its binary prints,
// and refuses either where EVAL fails for every script. Valkey without
// its Lua module (9.1 and later can run so) is not packaged here; EVAL
// renamed away (rename-command EVAL "") stands in for it: both answer an
// error to any EVAL, which is all Check sees.
func TestCheckNamesServer(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct{ bin, name string }{{"redis-server", "Redis"}, {"valkey-server", "Valkey"}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.name + " " + binaryVersion(t, tc.bin)

			evicting := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
			err := newLocker(t, evicting.Client(t), Config{}).Check(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `"allkeys-lru": `+srv+" may evict")

			noLua := redistest.Start(t, "--rename-command", "EVAL", "")
			err = newLocker(t, noLua.Client(t), Config{}).Check(ctx)
			require.Error(t, err)
			assert.Regexp(t, "^lease: check: "+srv+" cannot run Lua scripts.*EVAL answers ERR unknown command 'eval'", err.Error())
			t.Log(err)
		})
	}
}

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		srv server
		ok  bool
	}{
		{server{"Redis", "7.0.15"}, true}, {server{"Redis", "5.0.0"}, true},
		{server{"Redis", "10.2.1"}, true}, {server{"Redis", "4.0.14"}, false},
		{server{"Redis", "3.2.12"}, false}, {server{"Redis", ""}, false},
		{server{"Redis", "x.y"}, false}, {server{"Valkey", "7.2.4"}, true},
		{server{"Valkey", "8.0.1"}, true}, {server{"Valkey", "9.1.0"}, true},
		{server{"Valkey", "7.0.0"}, false}, {server{"Valkey", ""}, false},
	} {
		assert.Equal(t, tc.ok, checkVersion(tc.srv) == nil, tc.srv.String())
	}
	assert.EqualError(t, checkVersion(server{"Redis", "4.0.14"}), "Redis 4.0.14 is older than 5.0")
}

// identify reads what INFO says: Valkey by valkey_version or server_name,
// Redis otherwise (Valkey's redis_version is the Redis it matches).
func TestIdentify(t *testing.T) {
	assert.Equal(t, server{"Valkey", "8.0.1"}, identify(infoFields("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n")))
	assert.Equal(t, server{"Valkey", ""}, identify(infoFields("redis_version:7.2.4\r\nserver_name:valkey\r\n")))
	assert.Equal(t, server{"Redis", "7.0.15"}, identify(infoFields("# Server\r\nredis_version:7.0.15\r\n")))
}

// binaryVersion is the version a server binary prints (v=7.0.15). It
// makes bin the one redistest starts for the rest of the test, and skips
// or fails (redistest.Require) where it is missing.
func binaryVersion(t *testing.T, bin string) string {
	t.Helper()
	t.Setenv(redistest.ServerEnv, bin)
	redistest.Require(t)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(` v=(\S+)`).FindSubmatch(out)
	require.NotNil(t, m, "%s --version: %s", bin, out)
	return string(m[1])
}

// The README's support line names the versions make test runs on: those
// of the binaries make deps installs.
func TestReadmeNamesTestedVersions(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	want := "tested on Redis " + binaryVersion(t, "redis-server") + " and Valkey " + binaryVersion(t, "valkey-server") + ";"
	assert.Contains(t, regexp.MustCompile(`\s+`).ReplaceAllString(string(readme), " "), want)
}
