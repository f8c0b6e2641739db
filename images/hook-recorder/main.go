// Command hook-recorder records the lifecycle events a Windows container sees, with timestamps,
// so the suite can check postStart/preStop hooks (exec and HTTP) and graceful termination
// (CTRL_SHUTDOWN, which Go delivers as SIGTERM) on Windows nodes.
//
// Usage:
//
//	hook-recorder [serve] [-listen :8080] [-log PATH] [-shutdown-delay 0s]
//	hook-recorder record EVENT [-log PATH]     (for exec hooks: appends EVENT and exits)
//	hook-recorder events [-log PATH]           (prints the recorded events, one JSON object per line)
//
// HTTP (serve): GET or POST /hook/{event} records an HTTP hook call; GET /events returns the events
// as a JSON array; GET /healthz answers "ok". Every event is also written to stdout, so
// `kubectl logs` (or `--previous` after a restart) shows them.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// DefaultLog is a root-relative path: C:\hooks\events.log on Windows, /hooks/events.log elsewhere.
// Mount an emptyDir there to keep the events across container restarts.
const DefaultLog = "/hooks/events.log"

// Event is one line of the log.
type Event struct {
	Time   string `json:"time"`
	Event  string `json:"event"`
	Source string `json:"source"` // start, exec, http, signal, exit
	PID    int    `json:"pid"`
}

var eventName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// Recorder appends events to a file and to an io.Writer (stdout).
type Recorder struct {
	mu   sync.Mutex
	path string
	out  io.Writer
	now  func() time.Time
}

// NewRecorder creates the log's directory if needed.
func NewRecorder(path string, out io.Writer) (*Recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the directory of %s: %w", path, err)
	}
	return &Recorder{path: path, out: out, now: time.Now}, nil
}

// Record appends one event. Other processes (exec hooks) append to the same file with O_APPEND.
func (r *Recorder) Record(event, source string) (Event, error) {
	if !eventName.MatchString(event) {
		return Event{}, fmt.Errorf("event name %q must match %s", event, eventName)
	}
	ev := Event{Time: r.now().UTC().Format(time.RFC3339Nano), Event: event, Source: source, PID: os.Getpid()}
	line, err := json.Marshal(ev)
	if err != nil {
		return Event{}, err
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return Event{}, fmt.Errorf("cannot open %s: %w", r.path, err)
	}
	defer f.Close()
	if _, err := f.Write(line); err != nil {
		return Event{}, fmt.Errorf("cannot write %s: %w", r.path, err)
	}
	if r.out != nil {
		_, _ = r.out.Write(line)
	}
	return ev, nil
}

// Events reads back every recorded event; a missing log means none yet.
func (r *Recorder) Events() ([]Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return []Event{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events := []Event{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		var ev Event
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: malformed line %q: %w", r.path, scanner.Text(), err)
		}
		events = append(events, ev)
	}
	return events, scanner.Err()
}

// Handler serves the hook, events and health endpoints.
func Handler(r *Recorder) http.Handler {
	mux := http.NewServeMux()
	hook := func(w http.ResponseWriter, req *http.Request) {
		ev, err := r.Record(req.PathValue("event"), "http")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ev)
	}
	mux.HandleFunc("GET /hook/{event}", hook)
	mux.HandleFunc("POST /hook/{event}", hook)
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, _ *http.Request) {
		events, err := r.Events()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(events)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// Serve records "start", serves HTTP until a termination signal arrives on sig, records the signal,
// keeps serving for delay (so a test can see how long the kubelet waits), records "exit" and returns.
func Serve(r *Recorder, listen string, delay time.Duration, sig <-chan os.Signal) error {
	if _, err := r.Record("start", "start"); err != nil {
		return err
	}
	server := &http.Server{Addr: listen, Handler: Handler(r), ReadHeaderTimeout: 10 * time.Second}
	failed := make(chan error, 1)
	go func() {
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			failed <- err
		}
	}()
	select {
	case err := <-failed:
		return fmt.Errorf("cannot serve on %s: %w", listen, err)
	case s := <-sig:
		name := "terminate"
		if s == os.Interrupt {
			name = "interrupt"
		}
		if _, err := r.Record("signal:"+name, "signal"); err != nil {
			return err
		}
	}
	time.Sleep(delay)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = server.Shutdown(ctx)
	_, err := r.Record("exit", "exit")
	return err
}

func run(args []string, stdout, stderr io.Writer, sig <-chan os.Signal) int {
	command := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "record" || args[0] == "events") {
		command, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("hook-recorder "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	logPath := fs.String("log", DefaultLog, "events file (mount an emptyDir at its directory to keep it across restarts)")
	listen := fs.String("listen", ":8080", "address to serve HTTP hooks on (serve)")
	delay := fs.Duration("shutdown-delay", 0, "keep serving this long after SIGTERM/CTRL_SHUTDOWN (serve)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rec, err := NewRecorder(*logPath, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "hook-recorder:", err)
		return 1
	}
	switch command {
	case "record":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "hook-recorder: record takes exactly one EVENT, e.g. `hook-recorder record prestop`")
			return 2
		}
		rec.out = nil // an exec hook's stdout is discarded by the kubelet; the file is the record
		ev, err := rec.Record(fs.Arg(0), "exec")
		if err != nil {
			fmt.Fprintln(stderr, "hook-recorder:", err)
			return 1
		}
		line, _ := json.Marshal(ev)
		fmt.Fprintln(stdout, string(line))
		return 0
	case "events":
		events, err := rec.Events()
		if err != nil {
			fmt.Fprintln(stderr, "hook-recorder:", err)
			return 1
		}
		enc := json.NewEncoder(stdout)
		for _, ev := range events {
			_ = enc.Encode(ev)
		}
		return 0
	default:
		if err := Serve(rec, *listen, *delay, sig); err != nil {
			fmt.Fprintln(stderr, "hook-recorder:", err)
			return 1
		}
		return 0
	}
}

func main() {
	sig := make(chan os.Signal, 1)
	// On Windows, CTRL_CLOSE, CTRL_LOGOFF and CTRL_SHUTDOWN events arrive as SIGTERM, CTRL_C as os.Interrupt.
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, sig))
}
