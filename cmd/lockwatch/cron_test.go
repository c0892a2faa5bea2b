package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/testenv/integration"
	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
)

// readmeScript returns the report script of the README's section for
// operators, as a user would copy it.
func readmeScript(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```sh\n#!/bin/sh\n# /opt/report/run.sh")
	require.True(t, ok, "the README's report script is gone")
	script, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	script = "#!/bin/sh\n# /opt/report/run.sh" + script
	// The command's own manual shows the same script.
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	assert.Contains(t, string(doc), "//\t"+strings.ReplaceAll(strings.TrimSuffix(script, "\n"), "\n", "\n//\t"),
		"doc.go's report script differs from the README's")
	return script
}

// TestCronOnThreeHosts runs the README's cron example: three hosts start
// the same job at once under lockwatch run; one runs it and writes the
// report through the fence, the other two exit 75 without running it; a
// late write with an older fence is refused by PostgreSQL; the next night's
// run writes over it with a larger fence.
func TestCronOnThreeHosts(t *testing.T) {
	t.Parallel()
	db := pgtest.Open(t)
	psql, err := exec.LookPath("psql")
	if err != nil {
		integration.Unavailable(t, "cron", "psql (PostgreSQL's client; make deps installs it)", err)
	}
	ctx := testContext(t)
	_, err = db.ExecContext(ctx, `CREATE TABLE reports (name text PRIMARY KEY, body text NOT NULL, last_fence bigint NOT NULL DEFAULT 0);
		INSERT INTO reports (name, body) VALUES ('nightly', '')`)
	require.NoError(t, err)
	var schema string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema))

	dir := t.TempDir()
	// The job takes a while, so that the three runs overlap.
	generate := filepath.Join(dir, "generate")
	require.NoError(t, os.WriteFile(generate, []byte("#!/bin/sh\nsleep 2\necho \"report of $HOST\"\n"), 0o755))
	runSh := filepath.Join(dir, "run.sh")
	require.NoError(t, os.WriteFile(runSh, []byte(strings.ReplaceAll(readmeScript(t), "/opt/report/generate", generate)), 0o755))
	env := func(host string) []string {
		return []string{"HOST=" + host, "PATH=" + filepath.Dir(psql) + ":" + os.Getenv("PATH"),
			"REDIS_URL=redis://" + sharedAddr + "/0", "REPORTS_DSN=" + pgtest.DSN(), "PGOPTIONS=-c search_path=" + schema}
	}
	row := func() (body string, fence int64) {
		require.NoError(t, db.QueryRowContext(ctx, "SELECT body, last_fence FROM reports WHERE name = 'nightly'").Scan(&body, &fence))
		return body, fence
	}

	hosts := []string{"host-a", "host-b", "host-c"}
	runs := make([]*proc, len(hosts))
	for i, host := range hosts {
		runs[i] = startEnv(t, env(host), "run", "--key", "nightly-report", "--ttl", "30s", "--", runSh)
	}
	var ran []string
	for i, p := range runs {
		switch code := p.wait(t); code {
		case exitOK:
			ran = append(ran, hosts[i])
		case exitHeld:
			assert.Empty(t, p.stdout.String(), "a host that did not get the key ran nothing")
		default:
			t.Errorf("%s exited %d: %s", hosts[i], code, p.stderr.String())
		}
	}
	require.Len(t, ran, 1, "exactly one host runs the job")
	body, fence := row()
	assert.Equal(t, "report of "+ran[0], body)
	assert.Positive(t, fence)

	// A copy of the job whose lease was lost, writing late with its fence
	// or an older one: refused, the row keeps the newer report.
	for _, stale := range []int64{fence, fence - 1} {
		late := exec.Command(runSh)
		late.Env = append(cleanEnv(), append(env("late-host"), "LOCKWATCH_FENCE="+strconv.FormatInt(stale, 10))...)
		out, err := late.CombinedOutput()
		require.Error(t, err, "a stale write must fail the job")
		assert.Contains(t, string(out), "is stale")
		gotBody, gotFence := row()
		assert.Equal(t, body, gotBody)
		assert.Equal(t, fence, gotFence)
	}

	// The next night's run gets a larger fence and writes.
	next := startEnv(t, env("host-b"), "run", "--key", "nightly-report", "--ttl", "30s", "--", runSh)
	require.Equal(t, exitOK, next.wait(t), next.stderr.String())
	body, nextFence := row()
	assert.Equal(t, "report of host-b", body)
	assert.Greater(t, nextFence, fence)
}
