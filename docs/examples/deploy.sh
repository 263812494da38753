#!/bin/sh
# Deploy a release, asking a person first. Run it from the repository.
version=$1
regulator ask --kind consent --subject "deploy $version" \
  --question "Deploy $version to production now?" \
  --action "deploy $version to production" --timeout 120
case $? in
  0) echo "deploying $version" ;;            # yes: the note, if any, was printed under it
  1) echo "not deploying: refused"; exit 1 ;;
  3) echo "not deploying: nobody answered"; exit 3 ;;
  *) echo "not deploying: regulator failed"; exit 2 ;;
esac
