// Command hostile is a hostile mail server for measuring mailbench's memory
// against it: every IMAP and SMTP connection gets the chosen mode's endless
// answer, streamed as fast as the client reads it. Run mailbench against it
// and read its peak RSS (docs/performance.md, "Against a hostile server"):
//
//	go run ./bench/hostile -mode imap-greeting &
//	/usr/bin/time -v mailbench run bench/hostile/hostile.toml
//
// Modes: imap-greeting ("* OK " and no CRLF), imap-after-login (an endless
// line after LOGIN), imap-literal (* LIST with a 1 GiB literal after LOGIN),
// smtp-banner (an endless 220 line), smtp-ehlo (an endless 250- line).
// Loopback only.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
)

func main() {
	mode := flag.String("mode", "imap-greeting", "imap-greeting, imap-after-login, imap-literal, smtp-banner or smtp-ehlo")
	imapAddr := flag.String("imap", "127.0.0.1:11143", "IMAP listen address")
	smtpAddr := flag.String("smtp", "127.0.0.1:12525", "SMTP listen address")
	flag.Parse()
	filler := []byte(strings.Repeat("x", 64<<10))
	stream := func(c net.Conn, head string) {
		if _, err := c.Write([]byte(head)); err != nil {
			return
		}
		for {
			if _, err := c.Write(filler); err != nil {
				return
			}
		}
	}
	imap := func(c net.Conn) {
		defer c.Close()
		if *mode == "imap-greeting" {
			stream(c, "* OK ")
			return
		}
		fmt.Fprintf(c, "* OK [CAPABILITY IMAP4rev1 IDLE AUTH=PLAIN] hostile\r\n")
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			f := strings.Fields(line)
			if len(f) >= 2 && strings.EqualFold(f[1], "LOGIN") {
				switch *mode {
				case "imap-literal":
					stream(c, "* LIST () \"/\" {1073741824}\r\n")
				default:
					stream(c, "* OK ")
				}
				return
			}
			if len(f) >= 1 {
				fmt.Fprintf(c, "%s OK\r\n", f[0])
			}
		}
	}
	smtp := func(c net.Conn) {
		defer c.Close()
		if *mode == "smtp-banner" {
			stream(c, "220 ")
			return
		}
		fmt.Fprintf(c, "220 hostile ESMTP\r\n")
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if *mode == "smtp-ehlo" && strings.HasPrefix(strings.ToUpper(line), "EHLO") {
				stream(c, "250-")
				return
			}
			fmt.Fprintf(c, "250 ok\r\n")
		}
	}
	serve := func(addr string, h func(net.Conn)) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatal(err)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				log.Fatal(err)
			}
			go h(c)
		}
	}
	fmt.Fprintf(os.Stderr, "hostile %s: IMAP %s, SMTP %s\n", *mode, *imapAddr, *smtpAddr)
	go serve(*imapAddr, imap)
	serve(*smtpAddr, smtp)
}
