package common

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestAnErrorWithoutACodeIsNamedByItsGoType(t *testing.T) {
	cases := map[string]error{
		"errors.errorString": errors.New("some message that changes from run to run: 127.0.0.1:41234"),
		"net.OpError":        &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
	}
	for want, err := range cases {
		if got := ErrorName(err); got != want {
			t.Errorf("ErrorName(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestHoldReturnsTrueAndRemovesTheFileOnceItExists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "release")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Hold(path, make(chan os.Signal)) {
		t.Fatal("Hold returned false without a signal")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the release file is still there: %v", err)
	}
}

func TestHoldReturnsFalseOnASignalBeforeTheRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "release") // never created
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGTERM
	if Hold(path, sigs) {
		t.Fatal("Hold returned true though stopped before its release")
	}
}

func TestNoHoldPathIsNoHold(t *testing.T) {
	if !Hold("", nil) {
		t.Fatal("Hold without a path returned false")
	}
}
