package main

// The SDK's SimpleConsumer.Ack returns nil whatever status the proxy answers, and the SDK builds
// its gRPC connections without the client's connection options. Wrapping NewRpcClient (an
// exported variable of the SDK) adds a unary interceptor that records the proxy's answers to
// acks, invisible-duration changes and dead-letter forwards, so the scenarios can check them. The
// same wrapper points the SDK's per-call gRPC log, which otherwise goes to a fixed file in the
// system's temporary directory, at the log directory.

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
)

// rpcResult is the proxy's answer to one call: its status code, or -1 if the call itself failed.
type rpcResult struct {
	code int32
	msg  string
}

func (r rpcResult) ok() bool { return r.code == int32(v2.Code_OK) }

func (r rpcResult) String() string {
	if r.code < 0 {
		return "rpc error: " + r.msg
	}
	name, known := v2.Code_name[r.code]
	if !known {
		name = fmt.Sprint(r.code)
	}
	if r.msg != "" {
		return name + " (" + r.msg + ")"
	}
	return name
}

// invisibleChange is one ChangeInvisibleDuration call as sent and answered.
type invisibleChange struct {
	at        time.Time
	messageID string
	duration  time.Duration
	result    rpcResult
}

type rpcWatch struct {
	mu          sync.Mutex
	acks        map[string]rpcResult // by receipt handle
	changes     []invisibleChange
	dlqForwards map[string]rpcResult // by message id
}

func installRPCWatch(logFile string, toFile bool) *rpcWatch {
	w := &rpcWatch{acks: map[string]rpcResult{}, dlqForwards: map[string]rpcResult{}}
	logger := zap.NewNop()
	if toFile {
		if f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644); err == nil {
			enc := zap.NewProductionEncoderConfig()
			enc.EncodeTime = zapcore.ISO8601TimeEncoder
			logger = zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(f), zap.InfoLevel))
		}
	}
	orig := rmq.NewRpcClient
	rmq.NewRpcClient = func(target string, opts ...rmq.RpcClientOption) (rmq.RpcClient, error) {
		opts = append(opts, rmq.WithRpcClientConnOption(
			rmq.WithZapLogger(logger),
			rmq.WithDialOptions(grpc.WithChainUnaryInterceptor(w.intercept)),
		))
		return orig(target, opts...)
	}
	return w
}

func resultOf(st *v2.Status, err error) rpcResult {
	if err != nil {
		return rpcResult{code: -1, msg: err.Error()}
	}
	return rpcResult{code: int32(st.GetCode()), msg: st.GetMessage()}
}

func (w *rpcWatch) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch r := reply.(type) {
	case *v2.AckMessageResponse:
		overall := resultOf(r.GetStatus(), err)
		for _, entry := range req.(*v2.AckMessageRequest).GetEntries() {
			w.acks[entry.GetReceiptHandle()] = overall
		}
		if err == nil {
			for _, entry := range r.GetEntries() {
				if entry.GetStatus() != nil {
					w.acks[entry.GetReceiptHandle()] = resultOf(entry.GetStatus(), nil)
				}
			}
		}
	case *v2.ChangeInvisibleDurationResponse:
		q := req.(*v2.ChangeInvisibleDurationRequest)
		c := invisibleChange{
			at:        time.Now(),
			messageID: q.GetMessageId(),
			duration:  q.GetInvisibleDuration().AsDuration(),
			result:    resultOf(r.GetStatus(), err),
		}
		w.changes = append(w.changes, c)
		tracef("rpc", "ChangeInvisibleDuration %s %s on %s: %s", q.GetGroup().GetName(), c.duration, c.messageID, c.result)
	case *v2.ForwardMessageToDeadLetterQueueResponse:
		q := req.(*v2.ForwardMessageToDeadLetterQueueRequest)
		w.dlqForwards[q.GetMessageId()] = resultOf(r.GetStatus(), err)
	}
	return err
}

// ackResult is the recorded answer to the ack of a receipt handle.
func (w *rpcWatch) ackResult(handle string) (rpcResult, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.acks[handle]
	return r, ok
}

// changesOf lists the invisible-duration changes sent for a message id, oldest first.
func (w *rpcWatch) changesOf(messageID string) []invisibleChange {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []invisibleChange
	for _, c := range w.changes {
		if c.messageID == messageID {
			out = append(out, c)
		}
	}
	return out
}

func (w *rpcWatch) dlqForward(messageID string) (rpcResult, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.dlqForwards[messageID]
	return r, ok
}
