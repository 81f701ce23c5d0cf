// Command sdk5-go runs the 5.x gRPC SDK interop scenarios with the Apache RocketMQ Go client
// (github.com/apache/rocketmq-clients/golang/v5) against a RocketMQ proxy endpoint:
//
//	sdk5-go --endpoint HOST:PORT --suffix S [--only "SCEN ..."] [--timeout SECONDS] [--log-dir DIR] [--namesrv HOST:PORT]
//
// Scenarios: normal, fifo, delay, transaction, redeliver, push (see README.md). They use the
// topics sdk5-go-<kind>-S and groups sdk5-go-<scenario>-S, which must exist beforehand (the push
// scenario also reads its DLQ with the group sdk5-go-dlq-S). The scenarios run concurrently (each has its own topic and group); their lines are printed in the
// fixed order, one "PASS go <scenario> <details>" or "FAIL go <scenario>: <what differed>" each.
// Exit status 0 iff none failed, 1 otherwise, 2 on a usage error. The SDK's own logs go to
// --log-dir (default: the SDK's default under the home directory), never to stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

const lang = "go"

var verbose bool

// tracef reports a scenario's progress on stderr with --verbose.
func tracef(scen, format string, args ...any) {
	if verbose {
		fmt.Fprintf(os.Stderr, "%s %s: %s\n", time.Now().Format("15:04:05.000"), scen, fmt.Sprintf(format, args...))
	}
}

// env is what every scenario needs: where to connect and how to name its resources.
type env struct {
	endpoint string
	suffix   string
	timeout  time.Duration
	watch    *rpcWatch
}

func (e *env) topic(kind string) string { return fmt.Sprintf("sdk5-%s-%s-%s", lang, kind, e.suffix) }
func (e *env) group(scen string) string { return fmt.Sprintf("sdk5-%s-%s-%s", lang, scen, e.suffix) }

// outcome is one scenario's result line.
type outcome struct {
	verdict string // PASS, FAIL or SKIP
	detail  string
}

func pass(format string, args ...any) outcome { return outcome{"PASS", fmt.Sprintf(format, args...)} }
func fail(format string, args ...any) outcome { return outcome{"FAIL", fmt.Sprintf(format, args...)} }

type scenario struct {
	name string
	run  func(ctx context.Context, e *env) outcome
}

var scenarios = []scenario{
	{"normal", scenarioNormal},
	{"fifo", scenarioFifo},
	{"delay", scenarioDelay},
	{"transaction", scenarioTransaction},
	{"redeliver", scenarioRedeliver},
	{"push", scenarioPush},
}

func usage(msg string) {
	if msg != "" {
		fmt.Fprintf(os.Stderr, "sdk5-go: %s\n", msg)
	}
	fmt.Fprintln(os.Stderr, `usage: sdk5-go --endpoint HOST:PORT --suffix S [--only "SCEN ..."] [--timeout SECONDS] [--log-dir DIR] [--namesrv HOST:PORT] [--verbose]`)
	names := make([]string, 0, len(scenarios))
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	fmt.Fprintf(os.Stderr, "scenarios: %s\n", strings.Join(names, " "))
	os.Exit(2)
}

func main() {
	fs := flag.NewFlagSet("sdk5-go", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	endpoint := fs.String("endpoint", "", "proxy gRPC endpoint HOST:PORT")
	suffix := fs.String("suffix", "", "run suffix of the topic and group names")
	only := fs.String("only", "", "space-separated subset of the scenarios")
	timeout := fs.Int("timeout", 150, "bound in seconds on each scenario")
	logDir := fs.String("log-dir", "", "directory for the SDK's log files")
	fs.BoolVar(&verbose, "verbose", false, "trace each scenario's steps on stderr")
	// Accepted for a uniform command line; everything here goes through the proxy.
	fs.String("namesrv", "", "name server HOST:PORT (unused)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		usage("")
	}
	if fs.NArg() != 0 {
		usage("unexpected argument " + fs.Arg(0))
	}
	if *endpoint == "" || *suffix == "" {
		usage("--endpoint and --suffix are required")
	}
	if *timeout < 10 {
		usage("--timeout must be at least 10 seconds")
	}
	selected := scenarios
	if strings.TrimSpace(*only) != "" {
		selected = nil
		for _, name := range strings.Fields(*only) {
			found := false
			for _, s := range scenarios {
				if s.name == name {
					selected = append(selected, s)
					found = true
				}
			}
			if !found {
				usage("unknown scenario " + name)
			}
		}
	}

	if *logDir != "" {
		if err := os.MkdirAll(*logDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "sdk5-go: %v\n", err)
			os.Exit(1)
		}
		// The SDK reads its log root from the environment when its logger is (re)built; nothing
		// has been logged yet, so no file was opened at the default place.
		os.Setenv("rocketmq.client.logRoot", *logDir)
		os.Setenv("rocketmq.client.logFileName", "rocketmq_client_go.log")
		rmq.ResetLogger()
	}
	// The SDK dials with TLS unless this is off (it does not check the certificate): TLS with
	// SDK5_TLS=1, plaintext otherwise.
	rmq.EnableSsl = os.Getenv("SDK5_TLS") == "1"

	e := &env{endpoint: *endpoint, suffix: *suffix, timeout: time.Duration(*timeout) * time.Second}
	e.watch = installRPCWatch(filepath.Join(*logDir, "grpc_calls.log"), *logDir != "")

	results := make([]chan outcome, len(selected))
	for i, s := range selected {
		results[i] = make(chan outcome, 1)
		go func(s scenario, out chan<- outcome) {
			ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
			defer cancel()
			defer func() {
				if r := recover(); r != nil {
					out <- fail("panic: %v", r)
				}
			}()
			out <- s.run(ctx, e)
		}(s, results[i])
	}

	failed := false
	// A scenario blocked inside the SDK past its own deadline still gets a line.
	hardStop := time.Now().Add(e.timeout + 20*time.Second)
	for i, s := range selected {
		var o outcome
		select {
		case o = <-results[i]:
		case <-time.After(time.Until(hardStop)):
			o = fail("did not finish within %s", e.timeout+20*time.Second)
		}
		switch o.verdict {
		case "PASS":
			fmt.Printf("PASS %s %s %s\n", lang, s.name, o.detail)
		case "SKIP":
			fmt.Printf("SKIP %s %s: %s\n", lang, s.name, o.detail)
		default:
			failed = true
			fmt.Printf("FAIL %s %s: %s\n", lang, s.name, o.detail)
		}
	}
	if failed {
		os.Exit(1)
	}
	os.Exit(0)
}
