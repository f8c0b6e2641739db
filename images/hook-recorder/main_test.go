package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newRecorder(t *testing.T) (*Recorder, *bytes.Buffer) {
	t.Helper()
	out := &bytes.Buffer{}
	r, err := NewRecorder(filepath.Join(t.TempDir(), "hooks", "events.log"), out)
	if err != nil {
		t.Fatal(err)
	}
	return r, out
}

func TestHTTPHookIsRecordedInFileAndStdout(t *testing.T) {
	r, out := newRecorder(t)
	srv := httptest.NewServer(Handler(r))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/hook/prestop", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events, err := r.Events()
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Event != "prestop" || events[0].Source != "http" {
		t.Fatalf("events = %+v", events)
	}
	if !strings.Contains(out.String(), `"event":"prestop"`) {
		t.Fatalf("stdout = %q", out.String())
	}
	resp, err = http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listed []Event
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Event != "prestop" {
		t.Fatalf("GET /events = %+v", listed)
	}
}

func TestBadEventNameIsRejected(t *testing.T) {
	r, _ := newRecorder(t)
	srv := httptest.NewServer(Handler(r))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/hook/" + strings.Repeat("x", 80))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if events, _ := r.Events(); len(events) != 0 {
		t.Fatalf("a rejected event was recorded: %+v", events)
	}
}

func TestExecRecordAndEventsCommands(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events.log")
	var out, errOut bytes.Buffer
	if code := run([]string{"record", "-log", log, "poststart"}, &out, &errOut, nil); code != 0 {
		t.Fatalf("record exit %d: %s", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"events", "-log", log}, &out, &errOut, nil); code != 0 {
		t.Fatalf("events exit %d: %s", code, errOut.String())
	}
	var ev Event
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &ev); err != nil {
		t.Fatalf("events output %q: %v", out.String(), err)
	}
	if ev.Event != "poststart" || ev.Source != "exec" {
		t.Fatalf("event = %+v", ev)
	}
	if code := run([]string{"record", "-log", log}, &out, &errOut, nil); code != 2 {
		t.Fatalf("record without EVENT exit %d, want 2", code)
	}
}

func TestServeRecordsTerminationThenExitAfterDelay(t *testing.T) {
	r, _ := newRecorder(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sig := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(r, addr, 200*time.Millisecond, sig) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sig <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	events, err := r.Events()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ev := range events {
		names = append(names, ev.Event)
	}
	if strings.Join(names, ",") != "start,signal:terminate,exit" {
		t.Fatalf("events = %v", names)
	}
	signalled, _ := time.Parse(time.RFC3339Nano, events[1].Time)
	exited, _ := time.Parse(time.RFC3339Nano, events[2].Time)
	if gap := exited.Sub(signalled); gap < 200*time.Millisecond {
		t.Fatalf("exit %v after the signal, want at least the 200ms shutdown delay", gap)
	}
}
