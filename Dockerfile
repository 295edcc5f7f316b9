# The controller's image: the project installed into a slim Python, run as a non-root user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY statemachines ./statemachines
COPY controller ./controller
COPY manifests/base/crd.yaml ./manifests/base/crd.yaml
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
USER 65532:65532
EXPOSE 8080 8081 8090
ENTRYPOINT ["addon-status"]
CMD ["run"]
