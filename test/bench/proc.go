package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// cpu reads the CPU seconds used so far by the controller, kube-apiserver
// and etcd, to show where the time of a phase went. A controller that is
// not running counts 0, so that a phase that starts it measures all of it.
func (e *env) cpu() map[string]float64 {
	hk := 0.0
	if e.proc != nil && e.proc.Process != nil && e.proc.ProcessState == nil {
		hk = cpuSeconds(e.proc.Process.Pid)
	}
	return map[string]float64{
		"hivekeeper":     hk,
		"kube-apiserver": cpuSeconds(e.srv.APIServerPID()),
		"etcd":           cpuSeconds(e.srv.EtcdPID()),
	}
}

// cpuSeconds is utime+stime of a process from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	// The command name may contain spaces; fields start after its ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return math.NaN()
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// peakRSS reads the process's high-water resident set size.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb * 1024
			}
		}
	}
	return math.NaN()
}

// rssSplit reads how much of the process's resident memory is file-backed
// (its own binary's pages, mapped from disk and shared) and how much
// anonymous (heap, stacks, runtime), from /proc/<pid>/smaps_rollup: a
// controller's RSS is not only its heap.
func rssSplit(pid int) (anon, file float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return math.NaN(), math.NaN()
	}
	anon, file = math.NaN(), math.NaN()
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Pss_Anon:":
			anon = kb * 1024
		case "Pss_File:":
			file = kb * 1024
		}
	}
	return anon, file
}
