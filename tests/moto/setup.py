"""Give a moto server started with INITIAL_NO_AUTH_ACTION_COUNT=3 a user,
its access key and a policy allowing S3 (the three unauthenticated actions),
then create the bucket with that key. Prints the key as JSON.

Usage: setup.py ENDPOINT BUCKET
"""
import json
import sys

import boto3

endpoint, bucket = sys.argv[1], sys.argv[2]
anon = dict(endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
iam = boto3.client("iam", **anon)
iam.create_user(UserName="zrecord")
key = iam.create_access_key(UserName="zrecord")["AccessKey"]
iam.put_user_policy(
    UserName="zrecord",
    PolicyName="s3",
    PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }),
)
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
s3.create_bucket(Bucket=bucket)
print(json.dumps({"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}))
