package smtpclient

// Banner returns the first line of the server's 220 banner as received
// ("220 mx.example.com ESMTP Postfix"), without the line break. It doesn't
// perform I/O.
func (c *Client) Banner() string { return c.banner }
