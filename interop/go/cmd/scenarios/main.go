// Command scenarios drives the stock Apache RocketMQ Go client (rocketmq-client-go/v2) against a
// name server and broker: Silo or the reference Apache servers. Each scenario prints
// "PASS <scenario> <details>" and exits 0, or prints every difference it saw and exits 1.
//
//	go run ./cmd/scenarios SCENARIO --namesrv HOST:PORT [--count N] [--timeout DURATION]
//
// Scenarios:
//
//	produce-consume  N synchronous sends plus one batch send to a new topic, then a push consumer
//	                 (new group, from the first offset, subscription "*") must receive every message
//	                 exactly once, with its keys, tag and user properties, in per-queue order.
//	tag-filter       messages tagged TagA..TagD (and some without a tag); a push consumer subscribed
//	                 with "TagA || TagC" must receive exactly the TagA and TagC ones.
//	transaction      a transaction producer commits a third of the messages, rolls back a third and
//	                 answers "unknown" for the rest, which it commits or rolls back when the broker
//	                 checks them; a push consumer must receive exactly the committed ones.
//	sql-filter       messages with user properties; push consumers with SQL92 selectors must each
//	                 receive exactly the messages their expression selects.
//	all              all of them, one after the other.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

type config struct {
	namesrv string
	count   int
	timeout time.Duration
	grace   time.Duration
	verbose bool
	dump    int
	tls     bool
}

var scenarios = map[string]func(config) (string, []string){
	"produce-consume": produceConsume,
	"tag-filter":      tagFilter,
	"transaction":     transaction,
	"sql-filter":      sqlFilter,
}

var order = []string{"produce-consume", "tag-filter", "transaction", "sql-filter"}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: scenarios SCENARIO --namesrv HOST:PORT [--count N] [--timeout DURATION] [--grace DURATION] [--verbose] [--dump N] [--tls]\n")
	fmt.Fprintf(w, "scenarios: %s, all\n", strings.Join(order, ", "))
}

func main() {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	fs := flag.NewFlagSet("scenarios", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var cfg config
	fs.StringVar(&cfg.namesrv, "namesrv", "", "name server address HOST:PORT")
	fs.IntVar(&cfg.count, "count", 100, "number of single sends")
	fs.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "bound on the consumer's wait for the expected messages")
	fs.DurationVar(&cfg.grace, "grace", 3*time.Second, "how long to keep consuming after the last expected message, to catch duplicates and strays")
	fs.BoolVar(&cfg.verbose, "verbose", false, "keep the client's warnings (default: errors only)")
	fs.IntVar(&cfg.dump, "dump", 0, "print the first N SendResults and deliveries in full")
	fs.BoolVar(&cfg.tls, "tls", false, "connect to the name server and the brokers over TLS (the client does not check the certificate)")
	if err := fs.Parse(os.Args[2:]); err != nil {
		usage(os.Stderr)
		os.Exit(2)
	}
	if cfg.namesrv == "" || fs.NArg() != 0 || cfg.count < 1 {
		usage(os.Stderr)
		os.Exit(2)
	}

	dumpSends = cfg.dump
	if cfg.verbose {
		rlog.SetLogLevel("warn")
	} else {
		rlog.SetLogLevel("error")
	}

	var run []string
	if name == "all" {
		run = order
	} else if _, ok := scenarios[name]; ok {
		run = []string{name}
	} else {
		fmt.Fprintf(os.Stderr, "unknown scenario %q\n", name)
		usage(os.Stderr)
		os.Exit(2)
	}

	// Watchdog: every wait below is bounded, but a client call that never returns must not hang
	// the run either.
	limit := time.Duration(len(run)) * (cfg.timeout + cfg.grace + 2*time.Minute)
	watchdog := time.AfterFunc(limit, func() {
		fmt.Printf("FAIL %s: no result after %s (a client call did not return)\n", name, limit)
		os.Exit(1)
	})
	defer watchdog.Stop()

	failed := false
	for _, s := range run {
		details, problems := scenarios[s](cfg)
		if len(problems) == 0 {
			fmt.Printf("PASS %s %s\n", s, details)
			continue
		}
		failed = true
		fmt.Printf("FAIL %s %s: %d problem(s)\n", s, details, len(problems))
		const maxLines = 40
		for i, p := range problems {
			if i == maxLines {
				fmt.Printf("  ... and %d more\n", len(problems)-maxLines)
				break
			}
			fmt.Printf("  %s\n", p)
		}
	}
	if failed {
		os.Exit(1)
	}
}
