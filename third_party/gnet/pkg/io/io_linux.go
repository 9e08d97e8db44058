/*
 * Copyright (c) 2021 The Gnet Authors. All rights reserved.
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 *
 */

package io

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// dfly patch (README.dfly.md, "raw system calls"): Read, Write and Writev
// are for the event loops' non-blocking sockets, which never block, so
// they are raw system calls: the scheduler is not told, the P stays with
// the loop, and sysmon has no system call to take it back from.

// maxStackIovecs is how many buffers Writev passes without allocating.
const maxStackIovecs = 32

// Read calls read() on a non-blocking fd on Linux.
func Read(fd int, p []byte) (int, error) {
	var base unsafe.Pointer
	if len(p) > 0 {
		base = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(base), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// Write calls write() on a non-blocking fd on Linux.
func Write(fd int, p []byte) (int, error) {
	var base unsafe.Pointer
	if len(p) > 0 {
		base = unsafe.Pointer(&p[0])
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(base), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// Writev calls writev() on a non-blocking fd on Linux.
func Writev(fd int, iov [][]byte) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	var stack [maxStackIovecs]unix.Iovec
	vecs := stack[:0]
	if len(iov) > maxStackIovecs {
		vecs = make([]unix.Iovec, 0, len(iov))
	}
	for _, b := range iov {
		if len(b) == 0 {
			continue
		}
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vecs = append(vecs, v)
	}
	if len(vecs) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vecs[0])), uintptr(len(vecs)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// Readv calls readv() on Linux.
func Readv(fd int, iov [][]byte) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	return unix.Readv(fd, iov)
}
