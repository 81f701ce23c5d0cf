package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// clientConfig leaves Credentials nil: the proxy runs without ACL, and nil credentials make the
// SDK send no signature at all.
func (e *env) clientConfig(group string) *rmq.Config {
	return &rmq.Config{Endpoint: e.endpoint, ConsumerGroup: group}
}

func (e *env) startProducer(topics []string, opts ...rmq.ProducerOption) (rmq.Producer, error) {
	opts = append(opts, rmq.WithTopics(topics...))
	p, err := rmq.NewProducer(e.clientConfig(""), opts...)
	if err != nil {
		return nil, fmt.Errorf("new producer: %w", err)
	}
	if err := startBounded(p.Start); err != nil {
		return nil, fmt.Errorf("start producer: %w", err)
	}
	return p, nil
}

// startBounded runs a client's Start, which has no deadline of its own (it waits for the
// proxy's settings), and gives up after 20s.
func startBounded(start func() error) error {
	done := make(chan error, 1)
	go func() { done <- start() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("did not start within 20s")
	}
}

func (e *env) startSimple(group, topic string, await time.Duration) (rmq.SimpleConsumer, error) {
	subs := map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}
	c, err := rmq.NewSimpleConsumer(e.clientConfig(group),
		rmq.WithSimpleAwaitDuration(await),
		rmq.WithSimpleSubscriptionExpressions(subs))
	if err != nil {
		return nil, fmt.Errorf("new simple consumer: %w", err)
	}
	if err := startBounded(c.Start); err != nil {
		return nil, fmt.Errorf("start simple consumer: %w", err)
	}
	return c, nil
}

// stop runs a client's GracefulStop but waits for it at most d (the push consumer's waits for its
// in-flight long polls, up to their full timeout).
func stop(name string, fn func() error, d time.Duration) {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "sdk5-go: stopping %s: %v\n", name, err)
		}
	case <-time.After(d):
		tracef("stop", "%s still stopping after %s; left to the process exit", name, d)
	}
}

// receive is one Receive call; "no message" (MESSAGE_NOT_FOUND after the long poll) is an empty
// result, not an error. The call is bounded by ctx and by the consumer's await duration.
func receive(ctx context.Context, c rmq.SimpleConsumer, max int32, invisible time.Duration) ([]*rmq.MessageView, error) {
	mvs, err := c.Receive(ctx, max, invisible)
	if err != nil {
		if st, ok := rmq.AsErrRpcStatus(err); ok && st.GetCode() == int32(v2.Code_MESSAGE_NOT_FOUND) {
			return nil, nil
		}
		return nil, err
	}
	return mvs, nil
}

// receiveLoop calls receive until handle returns true, ctx ends, or until has passed when a
// long poll would start. Every long poll runs to its end (a cancelled one may still take a message
// out of view), so the loop can watch up to one await duration past until. Receive errors are
// retried after a pause (a long poll can fail transiently); the last one is returned if the loop
// ends without handle saying it is done.
func receiveLoop(ctx context.Context, c rmq.SimpleConsumer, until time.Time, max int32, invisible time.Duration,
	handle func(mv *rmq.MessageView, at time.Time) bool) error {
	var lastErr error
	for ctx.Err() == nil && time.Now().Before(until) {
		// The SDK bounds the call by its await duration plus its request timeout; this is a
		// backstop only.
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		mvs, err := receive(rctx, c, max, invisible)
		cancel()
		at := time.Now()
		tracef("receive", "%s: %d message(s), err %v", c.GetGroupName(), len(mvs), err)
		if err != nil {
			lastErr = err
			sleepCtx(ctx, 500*time.Millisecond)
			continue
		}
		for _, mv := range mvs {
			if handle(mv, at) {
				return nil
			}
		}
	}
	if lastErr != nil {
		return fmt.Errorf("receive: %w", lastErr)
	}
	return nil
}

// ack acknowledges and checks the proxy's answer, which the SDK's Ack does not.
func (e *env) ack(ctx context.Context, c rmq.SimpleConsumer, mv *rmq.MessageView) error {
	handle := mv.GetReceiptHandle()
	if err := c.Ack(ctx, mv); err != nil {
		return err
	}
	r, seen := e.watch.ackResult(handle)
	if !seen {
		return errors.New("ack: no AckMessage answer recorded")
	}
	if !r.ok() {
		return fmt.Errorf("ack answered %s", r)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// problems collects what differed; the first few are reported.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p problems) String() string {
	const show = 6
	if len(p) <= show {
		return strings.Join(p, "; ")
	}
	return strings.Join(p[:show], "; ") + fmt.Sprintf("; and %d more", len(p)-show)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
