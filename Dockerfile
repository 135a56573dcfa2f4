# mailbench's container image (docs/distributed.md): a static binary on an
# empty base, run as a non-root user.
#   docker build -t mailbench:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/mailbench/mailbench/internal/lib/version.Release=${VERSION}" \
      -o /out/mailbench ./cmd/mailbench

FROM scratch
# CA roots for servers under test with TLS.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/mailbench /mailbench
USER 65532:65532
ENTRYPOINT ["/mailbench"]
