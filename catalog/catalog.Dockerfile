# The catalog image, for people with Docker: opm serves index/ over gRPC, as a
# CatalogSource of sourceType grpc expects.
#   docker build -f catalog/catalog.Dockerfile -t IMAGE catalog
FROM quay.io/operator-framework/opm:v1.73.0
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
ADD index /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]
LABEL operators.operatorframework.io.index.configs.v1=/configs
