package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// ours parses a body "<prefix>-<i>-<suffix>" of this run; ok is false for anything else.
func (e *env) ours(body []byte, prefix string) (i int, ok bool) {
	s := string(body)
	if !strings.HasPrefix(s, prefix+"-") || !strings.HasSuffix(s, "-"+e.suffix) {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, prefix+"-"), "-"+e.suffix))
	return i, err == nil
}

func scenarioNormal(ctx context.Context, e *env) outcome {
	const n = 20
	topic, group := e.topic("normal"), e.group("normal")
	c, err := e.startSimple(group, topic, 5*time.Second)
	if err != nil {
		return fail("%v", err)
	}
	defer stop("normal consumer", c.GracefulStop, 5*time.Second)
	p, err := e.startProducer([]string{topic})
	if err != nil {
		return fail("%v", err)
	}
	defer stop("normal producer", p.GracefulStop, 5*time.Second)

	ids := make([]string, n)
	for i := 0; i < n; i++ {
		msg := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("normal-%d-%s", i, e.suffix))}
		msg.SetTag(tagOf(i))
		msg.SetKeys(fmt.Sprintf("k-%d", i))
		msg.AddProperty("idx", strconv.Itoa(i))
		receipts, err := p.Send(ctx, msg)
		if err != nil {
			return fail("send %d: %v", i, err)
		}
		ids[i] = receipts[0].MessageID
	}

	var bad problems
	seen := map[int]int{}
	strays := 0
	err = receiveLoop(ctx, c, time.Now().Add(30*time.Second), 16, 20*time.Second, func(mv *rmq.MessageView, _ time.Time) bool {
		i, ok := e.ours(mv.GetBody(), "normal")
		if !ok || i < 0 || i >= n {
			strays++
		} else {
			seen[i]++
			if seen[i] > 1 {
				bad.add("message %d received %d times", i, seen[i])
			}
			if tag := mv.GetTag(); tag == nil || *tag != tagOf(i) {
				bad.add("message %d: tag %s, want %s", i, strPtr(tag), tagOf(i))
			}
			if keys := mv.GetKeys(); len(keys) != 1 || keys[0] != fmt.Sprintf("k-%d", i) {
				bad.add("message %d: keys %q, want [k-%d]", i, keys, i)
			}
			if v, has := mv.GetProperties()["idx"]; !has || v != strconv.Itoa(i) {
				bad.add("message %d: property idx=%q (present %v)", i, v, has)
			}
			if mv.GetMessageId() != ids[i] {
				bad.add("message %d: id %s, send receipt said %s", i, mv.GetMessageId(), ids[i])
			}
			if a := mv.GetDeliveryAttempt(); a != 1 {
				bad.add("message %d: delivery attempt %d, want 1", i, a)
			}
		}
		if err := e.ack(ctx, c, mv); err != nil {
			bad.add("ack of %q: %v", mv.GetBody(), err)
		}
		return len(seen) == n
	})
	if len(seen) < n {
		missing := []int{}
		for i := 0; i < n; i++ {
			if seen[i] == 0 {
				missing = append(missing, i)
			}
		}
		bad.add("received %d of %d within 30s, missing %v (receive error: %v)", len(seen), n, missing, err)
	}

	// One more long poll: nothing of ours may come back after the acks.
	again := 0
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	mvs, err := receive(rctx, c, 16, 20*time.Second)
	cancel()
	if err != nil {
		bad.add("final receive: %v", err)
	}
	for _, mv := range mvs {
		if _, ok := e.ours(mv.GetBody(), "normal"); ok {
			again++
		}
		e.ack(ctx, c, mv)
	}
	if again > 0 {
		bad.add("%d message(s) delivered again after their ack", again)
	}
	if len(bad) > 0 {
		return fail("%s", bad)
	}
	return pass("%d/%d received once with tag, keys, idx property, send-receipt id and attempt 1; acked; "+
		"nothing more in a 5s long poll (strays from elsewhere: %d)", len(seen), n, strays)
}

func tagOf(i int) string {
	if i%2 == 1 {
		return "TagB"
	}
	return "TagA"
}

func strPtr(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

func scenarioFifo(ctx context.Context, e *env) outcome {
	const groups, per = 3, 10
	topic, group := e.topic("fifo"), e.group("fifo")
	c, err := e.startSimple(group, topic, 3*time.Second)
	if err != nil {
		return fail("%v", err)
	}
	defer stop("fifo consumer", c.GracefulStop, 5*time.Second)
	p, err := e.startProducer([]string{topic})
	if err != nil {
		return fail("%v", err)
	}
	defer stop("fifo producer", p.GracefulStop, 5*time.Second)

	// Interleaved, so that each message group's order is not simply the topic's order.
	for j := 0; j < per; j++ {
		for g := 0; g < groups; g++ {
			msg := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("fifo-%d-%s", g*100+j, e.suffix))}
			msg.SetMessageGroup(fmt.Sprintf("g%d", g))
			if _, err := p.Send(ctx, msg); err != nil {
				return fail("send g%d/%d: %v", g, j, err)
			}
		}
	}

	var bad problems
	order := make([][]int, groups)
	total := 0
	err = receiveLoop(ctx, c, time.Now().Add(30*time.Second), 32, 20*time.Second, func(mv *rmq.MessageView, _ time.Time) bool {
		if v, ok := e.ours(mv.GetBody(), "fifo"); ok && v/100 < groups && v%100 < per {
			g, j := v/100, v%100
			if mg := mv.GetMessageGroup(); mg == nil || *mg != fmt.Sprintf("g%d", g) {
				bad.add("g%d/%d: message group %s", g, j, strPtr(mg))
			}
			order[g] = append(order[g], j)
			total++
		}
		// Acked as it goes: the next message of a group is delivered only after this one.
		if err := e.ack(ctx, c, mv); err != nil {
			bad.add("ack of %q: %v", mv.GetBody(), err)
		}
		return total == groups*per
	})
	if total < groups*per {
		bad.add("received %d of %d within 30s (receive error: %v)", total, groups*per, err)
	}
	// A last long poll, for duplicates.
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	mvs, err := receive(rctx, c, 32, 20*time.Second)
	cancel()
	if err != nil {
		bad.add("final receive: %v", err)
	}
	for _, mv := range mvs {
		if v, ok := e.ours(mv.GetBody(), "fifo"); ok {
			order[v/100%groups] = append(order[v/100%groups], v%100)
		}
		e.ack(ctx, c, mv)
	}
	for g := range order {
		want := make([]int, per)
		for j := range want {
			want[j] = j
		}
		if fmt.Sprint(order[g]) != fmt.Sprint(want) {
			bad.add("group g%d arrived as %v, want %v", g, order[g], want)
		}
	}
	if len(bad) > 0 {
		return fail("%s", bad)
	}
	return pass("%d groups x %d received once each, in send order per group, acked as received", groups, per)
}

func scenarioDelay(ctx context.Context, e *env) outcome {
	const n = 5
	const delay = 3 * time.Second
	topic, group := e.topic("delay"), e.group("delay")
	c, err := e.startSimple(group, topic, 5*time.Second)
	if err != nil {
		return fail("%v", err)
	}
	defer stop("delay consumer", c.GracefulStop, 5*time.Second)
	p, err := e.startProducer([]string{topic})
	if err != nil {
		return fail("%v", err)
	}
	defer stop("delay producer", p.GracefulStop, 5*time.Second)

	due := make([]time.Time, n)
	sent := make([]time.Time, n)
	for i := 0; i < n; i++ {
		msg := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("delay-%d-%s", i, e.suffix))}
		sent[i] = time.Now()
		due[i] = sent[i].Add(delay)
		msg.SetDelayTimestamp(due[i])
		if _, err := p.Send(ctx, msg); err != nil {
			return fail("send %d: %v", i, err)
		}
	}

	var bad problems
	got := map[int]time.Time{}
	err = receiveLoop(ctx, c, sent[n-1].Add(15*time.Second), 16, 20*time.Second, func(mv *rmq.MessageView, at time.Time) bool {
		if i, ok := e.ours(mv.GetBody(), "delay"); ok && i >= 0 && i < n {
			if _, dup := got[i]; dup {
				bad.add("message %d received twice", i)
			} else {
				got[i] = at
			}
			if ts := mv.GetDeliveryTimestamp(); ts == nil {
				bad.add("message %d: no delivery timestamp", i)
			} else if d := ts.Sub(due[i]); d < -time.Millisecond || d > time.Millisecond {
				bad.add("message %d: delivery timestamp %s, sent with %s", i, ts.Format(time.RFC3339Nano), due[i].Format(time.RFC3339Nano))
			}
		}
		if err := e.ack(ctx, c, mv); err != nil {
			bad.add("ack of %q: %v", mv.GetBody(), err)
		}
		return len(got) == n
	})
	var early, late time.Duration = time.Hour, -time.Hour
	for i := 0; i < n; i++ {
		at, ok := got[i]
		if !ok {
			bad.add("message %d not received within 15s of its send (receive error: %v)", i, err)
			continue
		}
		d := at.Sub(due[i])
		if d < -time.Second {
			bad.add("message %d received %s before its delivery time", i, secs(-d))
		}
		if at.Sub(sent[i]) > 15*time.Second {
			bad.add("message %d received %s after its send", i, secs(at.Sub(sent[i])))
		}
		early, late = min(early, d), max(late, d)
	}
	if len(bad) > 0 {
		return fail("%s", bad)
	}
	return pass("%d/%d received %+.1fs..%+.1fs relative to their delivery time (now+3s), delivery timestamp intact",
		n, n, early.Seconds(), late.Seconds())
}

func scenarioTransaction(ctx context.Context, e *env) outcome {
	topic, group := e.topic("txn"), e.group("transaction")
	body := func(name string) string { return fmt.Sprintf("txn-%s-%s", name, e.suffix) }

	var mu sync.Mutex
	checked := map[string]int{}
	var firstCheck time.Time
	checker := &rmq.TransactionChecker{Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
		mu.Lock()
		defer mu.Unlock()
		b := string(mv.GetBody())
		checked[b]++
		switch b {
		case body("C"):
			if firstCheck.IsZero() {
				firstCheck = time.Now()
			}
			return rmq.COMMIT
		case body("A"):
			return rmq.COMMIT
		default:
			return rmq.ROLLBACK
		}
	}}

	c, err := e.startSimple(group, topic, 5*time.Second)
	if err != nil {
		return fail("%v", err)
	}
	defer stop("transaction consumer", c.GracefulStop, 5*time.Second)
	p, err := e.startProducer([]string{topic}, rmq.WithTransactionChecker(checker))
	if err != nil {
		return fail("%v", err)
	}
	defer stop("transaction producer", p.GracefulStop, 5*time.Second)

	send := func(name string, end func(rmq.Transaction) error) error {
		tx := p.BeginTransaction()
		msg := &rmq.Message{Topic: topic, Body: []byte(body(name))}
		msg.SetKeys("txn-" + name)
		if _, err := p.SendWithTransaction(ctx, msg, tx); err != nil {
			return fmt.Errorf("send %s: %w", name, err)
		}
		if end != nil {
			if err := end(tx); err != nil {
				return fmt.Errorf("end %s: %w", name, err)
			}
		}
		return nil
	}
	if err := send("A", rmq.Transaction.Commit); err != nil {
		return fail("%v", err)
	}
	if err := send("B", rmq.Transaction.RollBack); err != nil {
		return fail("%v", err)
	}
	sentC := time.Now()
	if err := send("C", nil); err != nil { // left UNKNOWN: only the check-back resolves it
		return fail("%v", err)
	}

	var bad problems
	got := map[string]int{}
	var gotC time.Time
	const grace = 5 * time.Second
	record := func(mv *rmq.MessageView, at time.Time) {
		b := string(mv.GetBody())
		if strings.HasPrefix(b, "txn-") && strings.HasSuffix(b, "-"+e.suffix) {
			got[b]++
			if b == body("C") && gotC.IsZero() {
				gotC = at
			}
		}
		if err := e.ack(ctx, c, mv); err != nil {
			bad.add("ack of %q: %v", b, err)
		}
	}
	// The check-back reaches the producer only once the proxy has registered the producer group
	// with the broker, which its transaction heartbeat does periodically.
	err = receiveLoop(ctx, c, sentC.Add(40*time.Second), 16, 20*time.Second, func(mv *rmq.MessageView, at time.Time) bool {
		record(mv, at)
		return got[body("A")] > 0 && !gotC.IsZero()
	})
	// Then a few more seconds, for B or a second copy to show up.
	if !gotC.IsZero() {
		receiveLoop(ctx, c, gotC.Add(grace), 16, 20*time.Second, func(mv *rmq.MessageView, at time.Time) bool {
			record(mv, at)
			return false
		})
	}
	mu.Lock()
	checksC, checksA, checksB := checked[body("C")], checked[body("A")], checked[body("B")]
	checkDelay := firstCheck.Sub(sentC)
	mu.Unlock()
	if got[body("A")] != 1 {
		bad.add("A (committed) received %d times", got[body("A")])
	}
	if got[body("C")] != 1 {
		bad.add("C (unknown, committed by the check) received %d times", got[body("C")])
	}
	if got[body("B")] != 0 {
		bad.add("B (rolled back) received %d times", got[body("B")])
	}
	if checksC == 0 {
		bad.add("the checker was never asked about C")
	}
	// A check of A or B is harmless (the checker answers as the producer did); it happens when the
	// broker checks before it has recorded the commit or rollback (its op batches).
	resolvedChecks := ""
	if checksA+checksB > 0 {
		resolvedChecks = fmt.Sprintf("; checker also asked about A %dx, B %dx", checksA, checksB)
	}
	for b, k := range got {
		if b != body("A") && b != body("B") && b != body("C") {
			bad.add("unexpected message %q received %d times", b, k)
		}
	}
	if err != nil && len(bad) > 0 {
		bad.add("receive error: %v", err)
	}
	if len(bad) > 0 {
		return fail("%s", bad)
	}
	return pass("A received once, C received once after the check-back (first check %s after its send, %d check(s), "+
		"received %s after its send), B never (watched %s past C)%s",
		secs(checkDelay), checksC, secs(gotC.Sub(sentC)), secs(grace), resolvedChecks)
}

func scenarioRedeliver(ctx context.Context, e *env) outcome {
	const invisible = 10 * time.Second
	topic, group := e.topic("redeliver"), e.group("redeliver")
	c, err := e.startSimple(group, topic, 5*time.Second)
	if err != nil {
		return fail("%v", err)
	}
	defer stop("redeliver consumer", c.GracefulStop, 5*time.Second)
	p, err := e.startProducer([]string{topic})
	if err != nil {
		return fail("%v", err)
	}
	defer stop("redeliver producer", p.GracefulStop, 5*time.Second)

	want := fmt.Sprintf("redeliver-0-%s", e.suffix)
	receipts, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(want)})
	if err != nil {
		return fail("send: %v", err)
	}
	id := receipts[0].MessageID

	var bad problems
	var first, second *rmq.MessageView
	var t1, t2 time.Time
	err = receiveLoop(ctx, c, time.Now().Add(15*time.Second), 1, invisible, func(mv *rmq.MessageView, at time.Time) bool {
		if string(mv.GetBody()) != want {
			e.ack(ctx, c, mv)
			return false
		}
		first, t1 = mv, at
		return true
	})
	if first == nil {
		return fail("first receive: message not received within 15s (%v)", err)
	}
	if a := first.GetDeliveryAttempt(); a != 1 {
		bad.add("first delivery attempt %d, want 1", a)
	}
	// Not acked: it must come back once the 10s are over, not before 8s.
	err = receiveLoop(ctx, c, t1.Add(25*time.Second), 1, invisible, func(mv *rmq.MessageView, at time.Time) bool {
		if string(mv.GetBody()) != want {
			e.ack(ctx, c, mv)
			return false
		}
		second, t2 = mv, at
		return true
	})
	if second == nil {
		return fail("not redelivered within 25s of the first receive (%v)", err)
	}
	gap := t2.Sub(t1)
	if gap < 8*time.Second {
		bad.add("redelivered after %s, before 8s", secs(gap))
	}
	if a := second.GetDeliveryAttempt(); a != 2 {
		bad.add("redelivery has delivery attempt %d, want 2", a)
	}
	if second.GetMessageId() != id {
		bad.add("redelivery has id %s, send receipt said %s", second.GetMessageId(), id)
	}

	// The SDK replaces the view's receipt handle with the one the change returns; the ack uses it.
	oldHandle := second.GetReceiptHandle()
	if err := c.ChangeInvisibleDuration(second, invisible); err != nil {
		return fail("%schange invisible duration: %v", prefix(bad), err)
	}
	newHandle := second.GetReceiptHandle()
	if newHandle == "" {
		bad.add("change invisible duration returned an empty receipt handle")
	}
	handleNote := "new handle"
	if newHandle == oldHandle {
		handleNote = "same handle"
	}
	if err := e.ack(ctx, c, second); err != nil {
		bad.add("ack with the changed handle: %v", err)
	}
	acked := time.Now()
	const watch = 13 * time.Second
	back := 0
	err = receiveLoop(ctx, c, acked.Add(watch), 1, invisible, func(mv *rmq.MessageView, at time.Time) bool {
		if string(mv.GetBody()) == want {
			back++
			bad.add("delivered again %s after the ack (attempt %d)", secs(at.Sub(acked)), mv.GetDeliveryAttempt())
		}
		e.ack(ctx, c, mv)
		return false
	})
	if err != nil {
		bad.add("watch after ack: %v", err)
	}
	if time.Since(acked) < 12*time.Second {
		bad.add("watched only %s after the ack", secs(time.Since(acked)))
	}
	if len(bad) > 0 {
		return fail("%s", bad)
	}
	return pass("attempt 1 not acked, redelivered after %s with attempt 2 and the same id; change-invisible-duration 10s ok (%s), "+
		"ack with it ok; not delivered again in %s", secs(gap), handleNote, secs(time.Since(acked)))
}

func prefix(p problems) string {
	if len(p) == 0 {
		return ""
	}
	return p.String() + "; "
}

// delivery is one call of the push consumer's listener.
type delivery struct {
	attempt int32
	at      time.Time
	ok      bool
}

func scenarioPush(ctx context.Context, e *env) outcome {
	const n = 10
	topic, group := e.topic("push"), e.group("push")
	dlqTopic := "%DLQ%" + group

	var mu sync.Mutex
	seen := map[int][]delivery{}
	ids := map[int]string{}
	listener := &rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
		i, ok := e.ours(mv.GetBody(), "push")
		if !ok {
			return rmq.SUCCESS
		}
		a := mv.GetDeliveryAttempt()
		succeed := !(i == 7 || (i == 3 && a < 3))
		mu.Lock()
		seen[i] = append(seen[i], delivery{attempt: a, at: time.Now(), ok: succeed})
		mu.Unlock()
		tracef("push", "message %d attempt %d -> success %v", i, a, succeed)
		if succeed {
			return rmq.SUCCESS
		}
		return rmq.FAILURE
	}}
	pc, err := rmq.NewPushConsumer(e.clientConfig(group),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
		rmq.WithPushMessageListener(listener),
		rmq.WithPushConsumptionThreadCount(4))
	if err != nil {
		return fail("new push consumer: %v", err)
	}
	if err := pc.Start(); err != nil {
		return fail("start push consumer: %v", err)
	}
	pcStopped := false
	defer func() {
		if !pcStopped {
			stop("push consumer", pc.GracefulStop, 3*time.Second)
		}
	}()
	p, err := e.startProducer([]string{topic})
	if err != nil {
		return fail("%v", err)
	}
	defer stop("push producer", p.GracefulStop, 5*time.Second)
	for i := 0; i < n; i++ {
		receipts, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("push-%d-%s", i, e.suffix))})
		if err != nil {
			return fail("send %d: %v", i, err)
		}
		ids[i] = receipts[0].MessageID
	}
	sent := time.Now()
	tracef("push", "sent %d", n)

	snapshot := func() map[int][]delivery {
		mu.Lock()
		defer mu.Unlock()
		out := map[int][]delivery{}
		for k, v := range seen {
			out[k] = append([]delivery(nil), v...)
		}
		return out
	}
	settled := func(s map[int][]delivery) bool {
		for i := 0; i < n; i++ {
			d := s[i]
			switch {
			case i == 7:
				if len(d) < 3 {
					return false
				}
			case len(d) == 0 || !d[len(d)-1].ok:
				return false
			}
		}
		return true
	}
	for ctx.Err() == nil && time.Since(sent) < 70*time.Second && !settled(snapshot()) {
		sleepCtx(ctx, 200*time.Millisecond)
	}

	// Message 7 has failed its last allowed attempt; the proxy moves it to the DLQ when it is due
	// again, so the push consumer keeps running meanwhile. The DLQ topic exists only from then on:
	// starting a SimpleConsumer on it (which looks up its route) is retried. It must not be of the
	// push group: the proxy would find the copy's delivery attempts (3) exhausted for that group
	// again and forward it back into the same DLQ on every receive, instead of delivering it.
	var bad problems
	var dlqNote string
	dlqStart := time.Now()
	var dc rmq.SimpleConsumer
	var startErr error
	// Up to the push consumer's next long poll after the last back-off, then up to the proxy's
	// route cache refresh (it keeps a "no such topic" answer for a while).
	for ctx.Err() == nil && time.Since(dlqStart) < 60*time.Second {
		if dc, startErr = e.startSimple(e.group("dlq"), dlqTopic, 3*time.Second); startErr == nil {
			break
		}
		sleepCtx(ctx, time.Second)
	}
	tracef("push", "DLQ consumer after %s: %v", secs(time.Since(dlqStart)), startErr)
	if dc == nil {
		bad.add("could not read %s within %s: %v", dlqTopic, secs(time.Since(dlqStart)), startErr)
	} else {
		defer stop("DLQ consumer", dc.GracefulStop, 5*time.Second)
		var found *rmq.MessageView
		var foundAt time.Time
		rerr := receiveLoop(ctx, dc, time.Now().Add(15*time.Second), 16, 20*time.Second, func(mv *rmq.MessageView, at time.Time) bool {
			if i, ok := e.ours(mv.GetBody(), "push"); ok && i == 7 {
				found, foundAt = mv, at
			} else {
				bad.add("unexpected message in %s: %q", dlqTopic, mv.GetBody())
			}
			if err := e.ack(ctx, dc, mv); err != nil {
				bad.add("ack in %s: %v", dlqTopic, err)
			}
			return found != nil
		})
		if found == nil {
			bad.add("message 7 not received from %s (receive error: %v)", dlqTopic, rerr)
		} else {
			if found.GetMessageId() != ids[7] {
				bad.add("DLQ copy of 7 has id %s, send receipt said %s", found.GetMessageId(), ids[7])
			}
			dlqNote = fmt.Sprintf("7 read from %s %s after its 3rd failure (attempt %d there, same id)",
				dlqTopic, secs(foundAt.Sub(lastAt(snapshot()[7]))), found.GetDeliveryAttempt())
		}
	}
	stop("push consumer", pc.GracefulStop, time.Second)
	pcStopped = true

	s := snapshot()
	for i := 0; i < n; i++ {
		d := s[i]
		switch i {
		case 3:
			if attempts(d) != "1,2,3" || !d[len(d)-1].ok {
				bad.add("message 3 attempts %s, want 1,2,3 with success on 3", attempts(d))
			}
		case 7:
			if attempts(d) != "1,2,3" {
				bad.add("message 7 attempts %s, want 1,2,3 then the DLQ", attempts(d))
			}
		default:
			if len(d) != 1 || !d[0].ok || d[0].attempt != 1 {
				bad.add("message %d deliveries %s, want one (attempt 1)", i, attempts(d))
			}
		}
	}
	if r, forwarded := e.watch.dlqForward(ids[7]); forwarded {
		dlqNote += fmt.Sprintf("; the SDK itself forwarded 7 to the DLQ (%s)", r)
	}
	if len(bad) > 0 {
		return fail("%s (deliveries: 3 at %s, 7 at %s)", bad, gaps(s[3]), gaps(s[7]))
	}
	return pass("8 consumed once; 3 attempts 1,2,3 (back-off %s, nack invisible durations %s); "+
		"7 attempts 1,2,3 (back-off %s, nack invisible durations %s), not a 4th time; %s",
		gaps(s[3]), nacks(e.watch.changesOf(ids[3])), gaps(s[7]), nacks(e.watch.changesOf(ids[7])), dlqNote)
}

func lastAt(d []delivery) time.Time {
	if len(d) == 0 {
		return time.Time{}
	}
	return d[len(d)-1].at
}

func attempts(d []delivery) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = strconv.Itoa(int(x.attempt))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// gaps is the time between consecutive deliveries, e.g. "1.2s,5.3s".
func gaps(d []delivery) string {
	sort.Slice(d, func(a, b int) bool { return d[a].at.Before(d[b].at) })
	var parts []string
	for i := 1; i < len(d); i++ {
		parts = append(parts, secs(d[i].at.Sub(d[i-1].at)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func nacks(cs []invisibleChange) string {
	var parts []string
	for _, c := range cs {
		s := secs(c.duration)
		if !c.result.ok() {
			s += "(" + c.result.String() + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
