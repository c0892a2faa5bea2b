package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables. Passwords come only from the environment: a flag
// would show them to every user of the machine in ps and in shell history.
const (
	envRedisURL         = "REDIS_URL"
	envPassword         = "LOCKWATCH_REDIS_PASSWORD"
	envRedisCLIAuth     = "REDISCLI_AUTH" // redis-cli's, the fallback
	envSentinelPassword = "LOCKWATCH_SENTINEL_PASSWORD"
	defaultRedisAddr    = "127.0.0.1:6379"
)

// pingTimeout bounds the first PING: long enough for a loaded server, short
// enough that a wrong address fails a cron job in seconds, not minutes.
const pingTimeout = 3 * time.Second

// connFlags are the connection flags every subcommand takes.
type connFlags struct {
	redis    string
	sentinel string
	master   string
	cluster  string
	user     string
}

// register adds the connection flags to fs. --redis has no default of its
// own: $REDIS_URL may hold a password, and the flag package prints a
// flag's default in -h. client reads the variable when the flag is unset.
func (c *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.redis, "redis", "", "Redis `host:port`, or a redis:// or rediss:// URL (default $"+envRedisURL+", then "+defaultRedisAddr+"); a password goes in $"+envPassword+", not here")
	fs.StringVar(&c.sentinel, "sentinel", "", "Sentinel `addrs` (host:port,host:port); needs --master")
	fs.StringVar(&c.master, "master", "", "the master `name` the sentinels monitor")
	fs.StringVar(&c.cluster, "cluster", "", "Redis Cluster seed `addrs` (host:port,...)")
	fs.StringVar(&c.user, "user", "", "ACL `user` name (the password comes from $"+envPassword+" or $"+envRedisCLIAuth+")")
}

// client validates the connection flags and builds the client they name,
// with a label for messages (never the password). set tells which flags
// were given on the command line: an explicit --redis conflicts with
// --sentinel and --cluster, the default does not. A fall back to the
// default address is said on stderr: a command that quietly reads a
// local Redis instead of the one meant answers about other keys.
func (c *connFlags) client(set map[string]bool, stderr io.Writer) (redis.UniversalClient, string, error) {
	switch {
	case c.sentinel != "" && c.cluster != "":
		return nil, "", fmt.Errorf("--sentinel and --cluster are two different deployments: give one")
	case set["redis"] && (c.sentinel != "" || c.cluster != ""):
		return nil, "", fmt.Errorf("--redis conflicts with --sentinel and --cluster: give one of them")
	case c.sentinel != "" && c.master == "":
		return nil, "", fmt.Errorf("--sentinel needs --master, the name the sentinels monitor")
	case c.master != "" && c.sentinel == "":
		return nil, "", fmt.Errorf("--master is only for --sentinel")
	}
	password := os.Getenv(envPassword)
	if password == "" {
		password = os.Getenv(envRedisCLIAuth)
	}
	if c.redis == "" {
		c.redis = os.Getenv(envRedisURL)
	} else if u, err := url.Parse(c.redis); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			return nil, "", fmt.Errorf("--redis: a password on the command line is visible to every user in ps: put it in $%s (or the whole URL in $%s)", envPassword, envRedisURL)
		}
	}
	if c.redis == "" {
		c.redis = defaultRedisAddr
		if c.sentinel == "" && c.cluster == "" {
			fmt.Fprintf(stderr, "lockwatch: using Redis at %s (the default; set --redis or $%s)\n", defaultRedisAddr, envRedisURL)
		}
	}
	switch {
	case c.sentinel != "":
		addrs, err := splitAddrs("--sentinel", c.sentinel)
		if err != nil {
			return nil, "", err
		}
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:            c.master,
			SentinelAddrs:         addrs,
			SentinelPassword:      os.Getenv(envSentinelPassword),
			Username:              c.user,
			Password:              password,
			ContextTimeoutEnabled: true,
		}), "sentinel master " + c.master + " via " + strings.Join(addrs, ","), nil
	case c.cluster != "":
		addrs, err := splitAddrs("--cluster", c.cluster)
		if err != nil {
			return nil, "", err
		}
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 addrs,
			Username:              c.user,
			Password:              password,
			ContextTimeoutEnabled: true,
		}), "cluster " + strings.Join(addrs, ","), nil
	}
	opts, err := c.single()
	if err != nil {
		return nil, "", err
	}
	if c.user != "" {
		opts.Username = c.user
	}
	// Credentials written in the URL win: they were given for this server.
	if opts.Password == "" {
		opts.Password = password
	}
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), opts.Addr, nil
}

// single reads --redis: a URL, or host:port.
func (c *connFlags) single() (*redis.Options, error) {
	if strings.Contains(c.redis, "://") {
		opts, err := redis.ParseURL(c.redis)
		if err != nil {
			// ParseURL's errors do not quote the URL, which may hold a password.
			return nil, fmt.Errorf("--redis: %v", err)
		}
		return opts, nil
	}
	if err := checkAddr(c.redis); err != nil {
		return nil, fmt.Errorf("--redis %q: %v", c.redis, err)
	}
	return &redis.Options{Addr: c.redis}, nil
}

// splitAddrs reads a comma-separated list of host:port.
func splitAddrs(flagName, list string) ([]string, error) {
	var addrs []string
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if err := checkAddr(a); err != nil {
			return nil, fmt.Errorf("%s %q: %v", flagName, a, err)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s: no address in %q", flagName, list)
	}
	return addrs, nil
}

func checkAddr(a string) error {
	if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
		return fmt.Errorf("want host:port")
	}
	return nil
}

// ping checks that the server answers before anything else is tried, so
// that a wrong address or a server that is down is one clear line, and no
// acquire is sent to a server that might answer it too late.
func ping(client redis.UniversalClient, label string) error {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		return fail(exitUnavailable, "redis %s: %v", label, err)
	}
	return nil
}

// quietRedis is go-redis's logger, silenced: it prints connection-pool
// chatter on stderr, and a CLI's stderr is its one-line errors and the
// lease's own Warn logs.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietRedis{}) }
